package graph

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"marketd/store"
	"marketd/store/storetest"
)

// Offers as GraphQL reads them: a collection's, an NFT's, a wallet's made and received, each
// a Relay connection; an offer refetched by its global id; an NFT's bestOffer and the
// collection's topOffer beside them.
func TestOffers_ConnectionsNodesAndBestOffers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, b storetest.Backend) {
		ctx := context.Background()
		g := newTestGraph(t, b, 60)
		col, err := g.store.CollectionBySlug(ctx, "ledger-apes")
		if err != nil {
			t.Fatal(err)
		}
		page, err := g.store.NFTs(ctx, col.ID, store.NFTFilter{}, store.SortSerial, store.PageRequest{Limit: 1})
		if err != nil || len(page.Items) == 0 {
			t.Fatalf("an NFT: %v", err)
		}
		nft := page.Items[0]
		bidder := newMinter(t, g.store, "bidder")
		offer := func(terms store.OfferTerms) string {
			terms.ExpiresAt = g.store.Now().Add(time.Hour).Unix()
			prep, err := g.store.PrepareOffer(ctx, bidder.ID, terms)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				CID string `json:"cid"`
			}
			if err := json.Unmarshal(bidder.execute(store.KindNFTOffer, prep), &r); err != nil {
				t.Fatal(err)
			}
			return r.CID
		}
		low := "0.001"
		whole := offer(store.OfferTerms{CollectionID: col.ID, Price: low})
		item := offer(store.OfferTerms{ContractID: nft.ContractID, Price: "0.002"})

		var got struct {
			CollectionOffers struct {
				Edges []struct {
					Node struct {
						ID, CID, Kind, Maker, Price string
						Remaining                   int
					}
				}
			}
			NftOffers struct {
				Edges []struct{ Node struct{ CID string } }
			}
			Collection struct {
				TopOffer string
				Nfts     struct {
					Edges []struct {
						Node struct {
							BestOffer struct{ CID, Price, Kind string }
						}
					}
				}
			}
		}
		g.data(`query($col: ID!, $nft: ID!) {
			collectionOffers(collection: $col) { edges { node { id cid kind maker price remaining } } }
			nftOffers(contractId: $nft) { edges { node { cid } } }
			collection(id: $col) { topOffer nfts(first: 1) { edges { node { bestOffer { cid price kind } } } } }
		}`, map[string]any{"col": col.ID, "nft": nft.ContractID}, &got)
		if len(got.CollectionOffers.Edges) != 1 || got.CollectionOffers.Edges[0].Node.CID != whole || got.CollectionOffers.Edges[0].Node.Kind != "COLLECTION" {
			t.Fatalf("collectionOffers: %+v", got.CollectionOffers)
		}
		if n := got.NftOffers.Edges; len(n) != 2 || n[0].Node.CID != item || n[1].Node.CID != whole {
			t.Errorf("nftOffers, best first: %+v", n)
		}
		if got.Collection.TopOffer != low {
			t.Errorf("topOffer %q, want %s", got.Collection.TopOffer, low)
		}
		if bo := got.Collection.Nfts.Edges[0].Node.BestOffer; bo.CID != item || bo.Kind != "ITEM" || bo.Price != "0.002" {
			t.Errorf("bestOffer %+v", bo)
		}

		// The offer refetched by its global id, and the wallet's connections.
		var node struct {
			Node struct {
				Typename string `json:"__typename"`
				CID      string
			}
		}
		g.data(`query($id: ID!) { node(id: $id) { __typename ... on Offer { cid } } }`, map[string]any{"id": got.CollectionOffers.Edges[0].Node.ID}, &node)
		if node.Node.Typename != "Offer" || node.Node.CID != whole {
			t.Errorf("node: %+v", node)
		}
		tok := bidder.signIn()
		res, _ := g.queryAs(tok, `query($p: ID!) { wallet(partyId: $p) { offers(first: 5) { edges { node { cid } } } offersReceived { edges { node { cid } } } } }`,
			map[string]any{"p": bidder.ID})
		var w struct {
			Wallet struct {
				Offers, OffersReceived struct {
					Edges []struct{ Node struct{ CID string } }
				}
			}
		}
		if len(res.Errors) > 0 || json.Unmarshal(res.Data, &w) != nil || len(w.Wallet.Offers.Edges) != 2 || len(w.Wallet.OffersReceived.Edges) != 0 {
			t.Errorf("wallet offers: %s %+v", res.Data, res.Errors)
		}
	})
}
