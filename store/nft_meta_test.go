package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"marketd/store"
	"marketd/store/nftmeta"
	"marketd/store/storetest"
)

// TestNFTMeta_TheMigrationKeepsEveryNameAndImageBothWays takes a market whose NFTs and unminted
// items hold names and images (hostile text among them) down to the two columns they had
// before the metadata was one object, and up again: the columns hold what the objects held,
// and every NFT reads as before.
func TestNFTMeta_TheMigrationKeepsEveryNameAndImageBothWays(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		if _, err := s.SeedDemo(ctx, store.DemoOptions{NFTs: 60, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		var creator string
		if err := s.WriteDB().NewRaw("SELECT creator FROM collections LIMIT 1").Scan(ctx, &creator); err != nil {
			t.Fatal(err)
		}
		hostile := []nftmeta.Fields{{Name: `say "hi" \ back`, Image: "https://img.example/ü/😀.png"}, {Name: "tab\there\nnew", Image: ""},
			{Name: "<&> U+2028\u2028", Image: "'; DROP TABLE nft_items; --"}}
		items := make([]store.ItemSpec, len(hostile))
		for i, f := range hostile {
			items[i] = store.ItemSpec{Fields: f, Traits: []store.Trait{{Type: "Hat", Value: "Cap"}}}
		}
		if _, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "hostile", Name: "Hostile", Creator: creator, Currency: store.CC,
			Supply: len(items), Items: items}); err != nil {
			t.Fatal(err)
		}
		var ids []string
		if err := s.WriteDB().NewRaw("SELECT collection_id FROM collections ORDER BY collection_id").Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		pages := func() map[string][]store.NFTView {
			out := map[string][]store.NFTView{}
			for _, id := range ids {
				p, err := s.ReferenceNFTs(ctx, id, store.NFTFilter{}, store.SortSerial, store.PageRequest{Limit: store.MaxPageSize})
				if err != nil {
					t.Fatal(err)
				}
				out[id] = p.Items
			}
			return out
		}
		metas := func(table string) []nftmeta.Fields {
			var rows []string
			if err := s.WriteDB().NewRaw("SELECT meta FROM "+table+" ORDER BY collection_id, serial").Scan(ctx, &rows); err != nil {
				t.Fatal(err)
			}
			out := make([]nftmeta.Fields, len(rows))
			for i, r := range rows {
				if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
					t.Fatalf("%s meta %q: %v", table, r, err)
				}
			}
			return out
		}
		before := pages()
		minted, unminted := metas("nft_items"), metas("collection_items")
		if len(minted) < 60 || len(unminted) < len(minted)+len(hostile) {
			t.Fatalf("%d NFTs, %d items: the seed did not make the market", len(minted), len(unminted))
		}
		for _, h := range hostile {
			if !slices.Contains(unminted, h) {
				t.Fatalf("the hostile item %q is not among the stored ones", h)
			}
		}

		s.RunMigration(t, "nft_meta.tx.down.sql")
		for table, want := range map[string][]nftmeta.Fields{"nft_items": minted, "collection_items": unminted} {
			var got []nftmeta.Fields
			if err := s.WriteDB().NewRaw("SELECT name, image FROM "+table+" ORDER BY collection_id, serial").Scan(ctx, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s after down: the columns hold %d rows unlike the objects (first %+v, want %+v)", table, len(got), got[:1], want[:1])
			}
		}

		s.RunMigration(t, "nft_meta.tx.up.sql")
		if got := metas("nft_items"); !reflect.DeepEqual(got, minted) {
			t.Fatal("nft_items' objects differ after down and up")
		}
		if got := metas("collection_items"); !reflect.DeepEqual(got, unminted) {
			t.Fatal("collection_items' objects differ after down and up")
		}
		if after := pages(); !reflect.DeepEqual(after, before) {
			t.Fatal("the NFTs read otherwise after down and up")
		}
	})
}

// TestNFTMeta_CreateCollectionChecksEachItemFieldByItsLimit: every text field of an item is
// checked by the limit its tag gives, and a refused items file creates nothing.
func TestNFTMeta_CreateCollectionChecksEachItemFieldByItsLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		s := b.Open(t, storetest.Config(new(storetest.Clock)))
		creator := storetest.Onboard(t, s, "creator")
		for _, c := range []struct {
			item nftmeta.Fields
			want string
		}{
			{nftmeta.Fields{Name: " \t"}, "item name is required"},
			{nftmeta.Fields{Name: strings.Repeat("é", 100) + "x"}, "item name must be at most 200 bytes of text"},
			{nftmeta.Fields{Name: "ok", Image: strings.Repeat("i", 1001)}, "item image must be at most 1000 bytes of text"},
			{nftmeta.Fields{Name: "ok", Image: "a\x00b"}, "item image must be at most 1000 bytes of text"},
		} {
			items := []store.ItemSpec{{Fields: nftmeta.Fields{Name: "fine", Image: strings.Repeat("i", 1000)}}, {Fields: c.item}}
			_, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "refused", Name: "Refused", Creator: creator.ID, Currency: store.CC, Supply: 2, Items: items})
			if store.ErrorCode(err) != store.CodeInvalidRequest || !strings.Contains(err.Error(), c.want) {
				t.Errorf("item %q: %v, want invalid_request %q", c.item, err, c.want)
			}
		}
		var n int
		if err := s.WriteDB().NewRaw("SELECT count(*) FROM collection_items").Scan(ctx, &n); err != nil || n != 0 {
			t.Fatalf("%d items stored after refusals (%v)", n, err)
		}
		if _, err := s.CreateCollection(ctx, store.CollectionSpec{Slug: "fine", Name: "Fine", Creator: creator.ID, Currency: store.CC, Supply: 1,
			Items: []store.ItemSpec{{Fields: nftmeta.Fields{Name: strings.Repeat("é", 100), Image: strings.Repeat("i", 1000)}}}}); err != nil {
			t.Fatalf("an item at its limits: %v", err)
		}
	})
}
