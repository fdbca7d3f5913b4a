package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"marketd/store"
)

// operatorStore opens and migrates the store for an operator command: it runs against the
// same store as the server, whether the server runs or not.
func operatorStore(ctx context.Context, c *config) (*store.Store, error) {
	s, err := openStore(ctx, c, newLogger("warn"))
	if err != nil {
		return nil, err
	}
	p := newProgress(os.Stderr, "applied %s / %s migrations")
	_, err = s.MigrateWithProgress(ctx, p.report)
	p.end()
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// printResult prints one JSON object on standard output.
func printResult(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// storeError says what went wrong in words, without the code's underscore.
func storeError(err error) error {
	var e *store.Error
	if errors.As(err, &e) {
		return errors.New(e.Message)
	}
	return err
}

func collectionCreate(args []string) error {
	var spec store.CollectionSpec
	var currency, items string
	c, extra, err := parseConfig("collection create", args, func(fs *flag.FlagSet) {
		fs.StringVar(&spec.Slug, "slug", "", "the collection's slug: 1 to 64 of [a-z0-9-] (required)")
		fs.StringVar(&spec.Name, "name", "", "its name (required)")
		fs.StringVar(&spec.Creator, "creator", "", "the creator's party id: receives mint payments and royalties (required)")
		fs.StringVar(&currency, "currency", "", "CC or USDCx: what it trades in (required)")
		fs.IntVar(&spec.RoyaltyBps, "royalty-bps", 0, "the creator's royalty on every sale, basis points")
		fs.IntVar(&spec.Supply, "supply", 0, "how many NFTs it can ever mint (required)")
		fs.StringVar(&items, "items", "", "a JSON file: an array of {name, image, traits: [{type, value}]}, one per serial")
		fs.StringVar(&spec.Description, "description", "", "its description")
		fs.StringVar(&spec.Image, "image", "", "its image URL")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("collection create takes no arguments, got %q", extra)
	}
	for _, f := range []struct{ name, v string }{{"--slug", spec.Slug}, {"--name", spec.Name}, {"--creator", spec.Creator}, {"--currency", currency}} {
		if f.v == "" {
			return fmt.Errorf("%s is required", f.name)
		}
	}
	spec.Currency = store.Instrument(currency)
	if items != "" {
		b, err := os.ReadFile(items)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec.Items); err != nil {
			return fmt.Errorf("%s: want a JSON array of {name, image, traits: [{type, value}]}: %v", items, err)
		}
		if spec.Supply == 0 {
			spec.Supply = len(spec.Items)
		}
	}
	ctx := context.Background()
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	col, err := s.CreateCollection(ctx, spec)
	if err != nil {
		return storeError(err)
	}
	return printResult(map[string]string{"id": col.ID, "slug": col.Slug})
}

func collectionAddPhase(args []string) error {
	var spec store.PhaseSpec
	var start, end int64
	var supply int
	var allow string
	c, extra, err := parseConfig("collection add-phase", args, func(fs *flag.FlagSet) {
		fs.StringVar(&spec.Collection, "collection", "", "the collection's id or slug (required)")
		fs.StringVar(&spec.Name, "name", "", "the phase's name (required)")
		fs.StringVar(&spec.Price, "price", "", "the price of one NFT, in the collection's currency (required; 0 for free)")
		fs.Int64Var(&start, "start", 0, "when it opens, Unix seconds (required)")
		fs.Int64Var(&end, "end", 0, "when it closes, Unix seconds (required)")
		fs.IntVar(&spec.PerPartyLimit, "per-party-limit", 0, "how many one party may mint in it (required)")
		fs.IntVar(&supply, "supply", 0, "how many it may mint in all (default: the collection's supply)")
		fs.StringVar(&allow, "allow", "", "comma-separated party ids: only they may mint in it")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 {
		return fmt.Errorf("collection add-phase takes no arguments, got %q", extra)
	}
	for _, f := range []struct {
		name string
		ok   bool
	}{{"--collection", spec.Collection != ""}, {"--name", spec.Name != ""}, {"--price", spec.Price != ""}, {"--start", start > 0}, {"--end", end > 0}, {"--per-party-limit", spec.PerPartyLimit > 0}} {
		if !f.ok {
			return fmt.Errorf("%s is required", f.name)
		}
	}
	spec.Start, spec.End = time.Unix(start, 0), time.Unix(end, 0)
	if supply > 0 {
		spec.Supply = &supply
	}
	for _, p := range strings.Split(allow, ",") {
		if p = strings.TrimSpace(p); p != "" {
			spec.Allow = append(spec.Allow, p)
		}
	}
	ctx := context.Background()
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	ph, err := s.AddPhase(ctx, spec)
	if err != nil {
		return storeError(err)
	}
	return printResult(map[string]any{
		"collectionId": ph.CollectionID, "name": ph.Name, "price": ph.Price, "start": ph.Start.Unix(), "end": ph.End.Unix(),
		"perPartyLimit": ph.PerPartyLimit, "supply": ph.Supply, "minted": ph.Minted, "allowList": ph.AllowList,
	})
}

func seedCmd(args []string) error {
	var demo bool
	offers := true
	var o store.DemoOptions
	c, extra, err := parseConfig("seed", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&demo, "demo", false, "fill an empty store with a demo market (required)")
		fs.IntVar(&o.NFTs, "nfts", 3000, "how many NFTs the demo market holds")
		fs.Uint64Var(&o.Seed, "seed", 0, "random seed of names, traits and prices (default: random)")
		fs.BoolVar(&offers, "offers", true, "make offers too, about one per NFT, a few accepted; --offers=false seeds the same market without them")
	})
	if err != nil {
		return err
	}
	if len(extra) > 0 || !demo {
		return errors.New("usage: marketd seed --demo [--nfts N] [--offers=false]")
	}
	o.Offers = offers
	ctx := context.Background()
	s, err := operatorStore(ctx, c)
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now()
	p := newProgress(os.Stderr, "seeded %s / %s NFTs")
	offersLine := newProgress(os.Stderr, "made %s / %s offers")
	o.Progress = p.report
	o.OfferProgress = func(done, total int) {
		p.end() // the NFTs are seeded: the offers' line starts on a line of its own
		offersLine.report(done, total)
	}
	sum, err := s.SeedDemo(ctx, o)
	p.end()
	offersLine.end()
	if err != nil {
		return storeError(err)
	}
	return printResult(map[string]any{"seeded": sum, "tookMs": time.Since(start).Milliseconds()})
}
