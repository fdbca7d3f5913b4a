package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"marketd/store/wallet"
)

// nftShortcut runs one of the NFT shortcuts as the exec it stands for.
func (w *cli) nftShortcut(cmd string, args []string) error {
	usage := func(u string) error { return errors.New("usage: walletctl " + u) }
	body := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	switch cmd {
	case "mint":
		if len(args) < 1 || len(args) > 2 {
			return usage("mint COLLECTION [QUANTITY]")
		}
		n := 1
		if len(args) == 2 {
			var err error
			if n, err = strconv.Atoi(args[1]); err != nil || n < 1 || n > wallet.MaxBatch {
				return fmt.Errorf("QUANTITY %q: want a whole number from 1 to %d (one signature covers at most %d)", args[1], wallet.MaxBatch, wallet.MaxBatch)
			}
		}
		maxPrice, err := w.askedMaxPrice()
		if err != nil {
			return err
		}
		id, err := w.collectionID(args[0])
		if err != nil {
			return err
		}
		if n == 1 {
			return w.exec("/api/nft/mint/atomic", body(map[string]any{"collectionId": id}), wantMint(args[0], id, n, maxPrice))
		}
		return w.exec("/api/nft/mint/batch/atomic", body(map[string]any{"collectionId": id, "quantity": n}), wantMint(args[0], id, n, maxPrice))
	case "list":
		if len(args) < 2 || len(args) > 3 {
			return usage("list CONTRACT_ID PRICE [EXPIRY]")
		}
		price, err := askedAmount("PRICE", args[1])
		if err != nil {
			return err
		}
		req := map[string]any{"contractId": args[0], "price": args[1]}
		var until *int64
		if len(args) == 3 {
			at, err := expiry(args[2], time.Now())
			if err != nil {
				return err
			}
			req["expiresAt"], until = at, &at
		}
		return w.exec("/api/nft/list", body(req), wantList(args[0], price, until))
	case "cancel":
		switch len(args) {
		case 0:
			return usage("cancel CID...")
		case 1:
			return w.exec("/api/nft/list/"+url.PathEscape(args[0])+"/cancel", "{}", wantCancel(args))
		}
		if err := underBatchLimit("cancel", len(args)); err != nil {
			return err
		}
		return w.exec("/api/nft/listing/batch/cancel", body(map[string]any{"cids": args}), wantCancel(args))
	case "buy":
		if len(args) != 1 {
			return usage("buy CID")
		}
		return w.exec("/api/nft/buy/atomic", body(map[string]any{"cid": args[0]}),
			wantBuy("buy listing "+args[0], wallet.KindNFTBuy, "", args, 0, nil))
	case "sweep":
		if len(args) < 3 {
			return usage("sweep COLLECTION MAX_TOTAL COUNT|CID...")
		}
		maxTotal, err := askedAmount("MAX_TOTAL", args[1])
		if err != nil {
			return err
		}
		req := map[string]any{"collectionId": args[0], "maxTotal": args[1]}
		n, count, cids := len(args)-2, 0, args[2:]
		asked := fmt.Sprintf("buy listing(s) %s of %s for at most %s in all", strings.Join(cids, ", "), args[0], maxTotal)
		if c, err := strconv.Atoi(args[2]); err == nil && len(args) == 3 && len(args[2]) <= 3 {
			n, count, cids, req["count"] = c, c, nil, c
			asked = fmt.Sprintf("buy the %d cheapest listing(s) of %s for at most %s in all", c, args[0], maxTotal)
		} else {
			req["cids"] = cids
		}
		if err := underBatchLimit("sweep", n); err != nil {
			return err
		}
		maxPrice, err := w.askedMaxPrice()
		if err != nil {
			return err
		}
		id, err := w.collectionID(args[0])
		if err != nil {
			return err
		}
		return w.exec("/api/nft/sweep/buy", body(req), wantSweep(wantBuy(asked, wallet.KindNFTSweep, id, cids, count, &maxTotal), args[0], maxPrice))
	case "transfer":
		if len(args) != 2 {
			return usage("transfer CONTRACT_ID PARTY")
		}
		return w.exec("/api/nft/transfer", body(map[string]any{"contractId": args[0], "receiver": args[1]}), wantMove(wallet.KindNFTTransfer, args[0], args[1]))
	case "burn":
		if len(args) != 1 {
			return usage("burn CONTRACT_ID")
		}
		return w.exec("/api/nft/burn", body(map[string]any{"contractId": args[0]}), wantMove(wallet.KindNFTBurn, args[0], ""))
	}
	return fmt.Errorf("unknown NFT shortcut %q", cmd)
}

// underBatchLimit refuses a batch the server would refuse, before any request is sent.
func underBatchLimit(cmd string, n int) error {
	if n > wallet.MaxBatch {
		return fmt.Errorf("%s of %d: one signature covers at most %d; split it", cmd, n, wallet.MaxBatch)
	}
	return nil
}

// collectionID returns ref when it is a collection id, else the id of the collection whose
// slug it is: the mint endpoints name a collection by id only.
func (w *cli) collectionID(ref string) (string, error) {
	if strings.HasPrefix(ref, "col_") {
		return ref, nil
	}
	var c struct {
		ID string `json:"id"`
	}
	if err := w.do("GET", "/api/nft/slug/"+url.PathEscape(ref), nil, "", &c); err != nil {
		return "", fmt.Errorf("collection %q: %w", ref, err)
	}
	return c.ID, nil
}

// askedMaxPrice reads --max-price, nil when not given.
func (w *cli) askedMaxPrice() (*wallet.Amount, error) {
	if w.maxPrice == "" {
		return nil, nil
	}
	p, err := askedAmount("--max-price", w.maxPrice)
	return &p, err
}

// expiry reads a listing's expiry: Unix seconds, or a duration from now.
func expiry(v string, now time.Time) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("EXPIRY %q: want Unix seconds or a positive duration such as 24h", v)
	}
	return now.Add(d).Unix(), nil
}
