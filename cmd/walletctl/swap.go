package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"marketd/store/wallet"
)

// swapShortcut runs one of the swap shortcuts as the call or exec it stands for.
func (w *cli) swapShortcut(cmd string, args []string) error {
	usage := func(u string) error { return errors.New("usage: walletctl " + u) }
	body := func(m map[string]any) string {
		b, _ := json.Marshal(m)
		return string(b)
	}
	// until is now plus the optional TTL argument at args[i].
	until := func(i int) (int64, error) {
		ttl := time.Hour
		if len(args) > i {
			d, err := time.ParseDuration(args[i])
			if err != nil || d <= 0 {
				return 0, fmt.Errorf("TTL %q: want a Go duration like 30m or 2h", args[i])
			}
			ttl = d
		}
		return time.Now().Add(ttl).Unix(), nil
	}
	switch cmd {
	case "pools":
		return w.call("GET", "/api/swap/pools", "")
	case "quote":
		if len(args) < 2 || len(args) > 3 {
			return usage("quote CC|USDCx AMOUNT [POOL]")
		}
		q := url.Values{"sell": {args[0]}, "amount": {args[1]}}
		if len(args) == 3 {
			q.Set("poolId", args[2])
		}
		return w.call("GET", "/api/swap/quote?"+q.Encode(), "")
	case "lp":
		if len(args) == 0 {
			return usage("lp publish|cancel|claim|active ...")
		}
		switch sub, args := args[0], args[1:]; sub {
		case "publish":
			if len(args) < 4 || len(args) > 5 {
				return usage("lp publish POOL ask|bid PRICE SIZE [TTL]")
			}
			at, err := until(5)
			if err != nil {
				return err
			}
			price, err := askedAmount("PRICE", args[2])
			if err != nil {
				return err
			}
			size, err := askedAmount("SIZE", args[3])
			if err != nil {
				return err
			}
			return w.exec("/api/swap/lp-quote", body(map[string]any{"poolId": args[0], "side": args[1], "price": args[2], "size": args[3], "expiresAt": at}),
				wantLPQuote(args[0], args[1], price, size, at))
		case "cancel":
			if len(args) != 1 {
				return usage("lp cancel CID")
			}
			return w.exec("/api/swap/lp-quote/cancel", body(map[string]any{"cid": args[0]}), wantLPCancel(args[0]))
		case "claim":
			if len(args) != 1 {
				return usage("lp claim POOL")
			}
			return w.exec("/api/swap/lp-quote/claim-fees", body(map[string]any{"poolId": args[0]}), wantClaimFees(args[0]))
		case "active":
			return w.call("GET", "/api/swap/lp-quote/active", "")
		}
		return usage("lp publish|cancel|claim|active ...")
	case "swap":
		if len(args) == 0 {
			return usage("swap submit|cancel|status|active|history ...")
		}
		switch sub, args := args[0], args[1:]; sub {
		case "submit":
			if len(args) < 4 || len(args) > 5 {
				return usage("swap submit POOL CC|USDCx AMOUNT MIN [TTL]")
			}
			at, err := until(5)
			if err != nil {
				return err
			}
			sell, err := wallet.ParseInstrument(args[1])
			if err != nil {
				return err
			}
			amount, err := askedAmount("AMOUNT", args[2])
			if err != nil {
				return err
			}
			minReceive, err := askedAmount("MIN", args[3])
			if err != nil {
				return err
			}
			return w.exec("/api/swap", body(map[string]any{"poolId": args[0], "sell": args[1], "amount": args[2], "minReceive": args[3], "deadline": at}),
				wantSwap(args[0], sell, amount, minReceive, at))
		case "cancel":
			if len(args) != 1 {
				return usage("swap cancel INTENT")
			}
			return w.exec("/api/swap/intent/cancel", body(map[string]any{"intentCid": args[0]}), wantIntentCancel(args[0]))
		case "status":
			if len(args) != 1 {
				return usage("swap status INTENT")
			}
			return w.call("GET", "/api/swap/intent/status?intentCid="+url.QueryEscape(args[0]), "")
		case "active":
			return w.call("GET", "/api/swap/intent/active", "")
		case "history":
			return w.call("GET", "/api/swap/history", "")
		}
		return usage("swap submit|cancel|status|active|history ...")
	}
	return nil
}
