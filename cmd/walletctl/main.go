// Command walletctl is the wallet a person or a script uses with marketd: it keeps an Ed25519
// key, onboards its party, signs in, and signs prepared transactions. Before it signs one it
// checks that the hash is the SHA-256 of the transaction's bytes, decodes those bytes (never
// the server's summary of them), shows what they do and, for a shortcut, refuses unless they do
// exactly what was asked. It keeps the receipts of its executes and checks them against the
// service's transparency log (verify), or checks the whole log (audit), pinning the log's key
// and the last checkpoint seen beside the key file.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"marketd/cmd/internal/cmdline"
	"marketd/store/wallet"
)

func main() {
	os.Exit(cmdline.Exit(os.Stderr, "walletctl", run(os.Args[1:], os.Stdout, os.Stderr)))
}

// cli is one invocation's settings.
type cli struct {
	server  string
	keyPath string
	hint    string // keygen --hint
	hash    string // sign --hash
	// login's overrides: the domain, URI and network its challenge may name instead of the
	// ones walletctl asked for (the server's, and WALLETCTL_NETWORK's).
	acceptDomain, acceptURI, network string
	maxPrice                         string        // mint and sweep --max-price: the most one NFT may cost
	offer                            offerOptions  // offer's flags
	received                         bool          // offers --received
	collection                       string        // offers --collection
	minProceeds                      string        // accept --min-proceeds
	witnesses                        witnessPolicy // verify and audit --witness, --witnesses
	out                              io.Writer
	log                              io.Writer
	http                             *http.Client
}

func run(args []string, out, log io.Writer) error {
	w := &cli{out: out, log: log, http: &http.Client{Timeout: 30 * time.Second}}
	fs := flag.NewFlagSet("walletctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&w.server, "server", envOr(envServer, "http://localhost:8080"), "the service")
	fs.StringVar(&w.keyPath, "key", envOr(envKey, "wallet.key"), "the key file")
	globals, args := splitGlobalFlags(args)
	if _, err := cmdline.Parse("walletctl", cmdline.Command{}, fs, globals); err != nil {
		return err
	}
	w.server = strings.TrimRight(w.server, "/")
	args = append(fs.Args(), args...)
	switch {
	case len(args) == 0:
		printUsage(log)
		return &cmdline.UsageError{Cmd: "walletctl", Err: errors.New("no command")}
	case cmdline.IsHelp(args[0]) && len(args) > 1: // walletctl help CMD
		args = append(args[1:], "-h")
	case cmdline.IsHelp(args[0]):
		printUsage(out)
		return nil
	case cmdline.GroupHelp(out, "walletctl", commands, args): // walletctl lp -h
		return nil
	}
	c, rest, ok := cmdline.Find(commands, args)
	if !ok {
		return cmdline.NotFound("walletctl", commands, args)
	}
	args, err := w.parseOwn(c, rest)
	if err != nil {
		return err
	}
	if !c.offline {
		warnPlainHTTP(w.log, w.server)
	}
	if len(args) > 0 && (c.Args == "" || c.Name == "keygen") {
		return &cmdline.UsageError{Cmd: "walletctl " + c.Name, Err: fmt.Errorf("takes no arguments, got %q", args)}
	}
	// The shortcuts of a group (lp, swap) take their verb as their first argument.
	words := strings.Fields(c.Name)
	cmd, args := words[0], append(words[1:], args...)
	switch cmd {
	case "keygen":
		return w.keygen()
	case "onboard":
		return w.onboard()
	case "login":
		return w.login()
	case "logout":
		return w.logout()
	case "whoami":
		return w.call("GET", "/api/auth/me", "")
	case "party":
		k, _, err := w.loadKey()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w.out, k.PartyID)
		return err
	case "token":
		tok, err := w.token()
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w.out, tok)
		return err
	case "sign":
		return w.sign(args)
	case "call":
		if len(args) < 2 || len(args) > 3 {
			return errors.New("usage: walletctl call METHOD PATH [JSON]")
		}
		body := ""
		if len(args) == 3 {
			body = args[2]
		}
		return w.call(strings.ToUpper(args[0]), args[1], body)
	case "verify":
		return w.verify(args)
	case "audit":
		return w.audit()
	case "exec":
		if len(args) != 2 {
			return errors.New("usage: walletctl exec PATH JSON   (PATH without /prepare, e.g. /api/wallet/cc-transfer)")
		}
		return w.exec(args[0], args[1], nil)
	case "balance", "utxos", "tap", "send", "preapprove", "renew", "rewards":
		return w.shortcut(cmd, args)
	case "pools", "quote", "lp", "swap":
		return w.swapShortcut(cmd, args)
	case "mint", "list", "cancel", "buy", "sweep", "transfer", "burn":
		return w.nftShortcut(cmd, args)
	case "offer", "offers", "accept":
		return w.offerShortcut(c.Name, args[len(words)-1:])
	}
	return fmt.Errorf("command %q has no runner", c.Name)
}

// shortcut runs one of the wallet shortcuts as the call or exec it stands for.
func (w *cli) shortcut(cmd string, args []string) error {
	body := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	want := func(n int, usage string) error {
		if len(args) != n {
			return errors.New("usage: walletctl " + usage)
		}
		return nil
	}
	switch cmd {
	case "balance":
		return w.call("GET", "/api/wallet/balance/{me}", "")
	case "utxos":
		return w.call("GET", "/api/wallet/utxo-count/{me}", "")
	case "tap":
		if err := want(2, "tap CC|USDCx AMOUNT"); err != nil {
			return err
		}
		inst, err := wallet.ParseInstrument(args[0])
		if err != nil {
			return err
		}
		amount, err := askedAmount("AMOUNT", args[1])
		if err != nil {
			return err
		}
		return w.exec("/api/wallet/tap", body("instrument", args[0], "amount", args[1]), wantTap(inst, amount))
	case "send":
		if err := want(2, "send PARTY AMOUNT"); err != nil {
			return err
		}
		amount, err := askedAmount("AMOUNT", args[1])
		if err != nil {
			return err
		}
		return w.exec("/api/wallet/cc-transfer", body("receiver", args[0], "amount", args[1]), wantSend(args[0], amount))
	case "preapprove":
		if err := want(1, "preapprove nft|usdcx"); err != nil {
			return err
		}
		kind, err := wallet.ParsePreapprovalKind(args[0])
		if err != nil {
			return err
		}
		return w.exec("/api/wallet/"+args[0]+"-preapproval", "{}", wantPreapproval(kind))
	case "renew":
		if err := want(1, "renew nft|usdcx"); err != nil {
			return err
		}
		kind, err := wallet.ParsePreapprovalKind(args[0])
		if err != nil {
			return err
		}
		return w.exec("/api/wallet/preapproval/renew", body("kind", args[0]), wantRenewal(kind))
	case "rewards":
		if len(args) == 1 && args[0] == "history" {
			return w.call("GET", "/api/wallet/rewards/{me}/history", "")
		}
		if err := want(0, "rewards [history]"); err != nil {
			return err
		}
		return w.call("GET", "/api/wallet/rewards/{me}", "")
	}
	return nil
}

// expandPath puts the key's party id where a path says {me}.
func (w *cli) expandPath(path string) (string, error) {
	if !strings.Contains(path, "{me}") {
		return path, nil
	}
	k, _, err := w.loadKey()
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(path, "{me}", url.PathEscape(k.PartyID)), nil
}

// splitGlobalFlags takes --server and --key out of args wherever they stand, so that
// "walletctl keygen --key alice.key" works as well as "walletctl --key alice.key keygen".
func splitGlobalFlags(args []string) (globals, rest []string) {
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || (name != "server" && name != "key") {
			rest = append(rest, args[i])
			continue
		}
		globals = append(globals, args[i])
		if !hasValue && i+1 < len(args) {
			i++
			globals = append(globals, args[i])
		}
	}
	return globals, rest
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// keyFile is what walletctl keeps on disk. The private key is the 32-byte Ed25519 seed.
type keyFile struct {
	Hint       string `json:"hint"`
	PartyID    string `json:"partyId"`
	PublicKey  string `json:"publicKey"`
	PrivateKey string `json:"privateKey"`
}

func (w *cli) keygen() error {
	hint := &w.hint
	if !wallet.ValidHint(*hint) {
		return fmt.Errorf("hint %q: want 1 to 64 of [A-Za-z0-9_-]", *hint)
	}
	if _, err := os.Stat(w.keyPath); err == nil {
		return fmt.Errorf("%s exists; remove it or choose another --key", w.keyPath)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	k := keyFile{
		Hint: *hint, PartyID: wallet.PartyIDFor(*hint, pub),
		PublicKey:  base64.StdEncoding.EncodeToString(pub),
		PrivateKey: base64.StdEncoding.EncodeToString(priv.Seed()),
	}
	if err := writeJSONFile(w.keyPath, k, true); err != nil {
		return err
	}
	fmt.Fprintf(w.log, "wrote %s (mode 0600); onboard it with: walletctl --key %s onboard\n", w.keyPath, w.keyPath)
	return printJSON(w.out, map[string]string{"partyId": k.PartyID, "publicKey": k.PublicKey})
}

// writeJSONFile writes v to path, readable by the owner only, without ever widening it.
func writeJSONFile(path string, v any, exclusive bool) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if exclusive {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (w *cli) loadKey() (*keyFile, ed25519.PrivateKey, error) {
	b, err := os.ReadFile(w.keyPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("no key file %s; create one with: walletctl --key %s keygen --hint NAME", w.keyPath, w.keyPath)
	}
	if err != nil {
		return nil, nil, err
	}
	var k keyFile
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", w.keyPath, err)
	}
	seed, err := base64.StdEncoding.DecodeString(k.PrivateKey)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, nil, fmt.Errorf("%s: privateKey is not a base64 Ed25519 seed", w.keyPath)
	}
	return &k, ed25519.NewKeyFromSeed(seed), nil
}

// session is the token walletctl keeps beside the key.
type session struct {
	Server    string `json:"server"`
	PartyID   string `json:"partyId"`
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expiresAt"`
}

func (w *cli) tokenPath() string { return w.keyPath + ".token" }

func (w *cli) loadSession() (*session, error) {
	b, err := os.ReadFile(w.tokenPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s session
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", w.tokenPath(), err)
	}
	if s.Server != w.server {
		return nil, nil
	}
	return &s, nil
}

func (w *cli) onboard() error {
	k, priv, err := w.loadKey()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"publicKey": k.PublicKey, "hint": k.Hint})
	res, err := w.prepareAndExecute("/api/parties/onboard/prepare", "/api/parties/onboard/execute", body, priv, "", k.PartyID, wantOnboard(k))
	if err != nil {
		return err
	}
	var r struct {
		PartyID string `json:"partyId"`
	}
	json.Unmarshal(res, &r)
	if r.PartyID != "" && r.PartyID != k.PartyID {
		// The key was onboarded before under another hint: that party is the key's.
		k.PartyID = r.PartyID
		if err := writeJSONFile(w.keyPath, k, false); err != nil {
			return err
		}
	}
	return printRaw(w.out, res)
}

func (w *cli) login() error {
	k, priv, err := w.loadKey()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"partyId": k.PartyID})
	var nr struct {
		Message string `json:"message"`
		Nonce   string `json:"nonce"`
	}
	if err := w.do("POST", "/api/auth/nonce", body, "", &nr); err != nil {
		return err
	}
	c, err := wallet.ParseChallenge(nr.Message)
	if err != nil {
		return fmt.Errorf("the server's challenge is not one to sign: %v", err)
	}
	if err := w.checkChallenge(c, k.PartyID, nr.Nonce, time.Now()); err != nil {
		return err
	}
	sig := ed25519.Sign(priv, []byte(nr.Message))
	body, _ = json.Marshal(map[string]string{"partyId": k.PartyID, "signature": base64.StdEncoding.EncodeToString(sig), "nonce": nr.Nonce})
	var tr struct {
		Token     string `json:"token"`
		ExpiresAt int64  `json:"expiresAt"`
	}
	if err := w.do("POST", "/api/auth/verify", body, "", &tr); err != nil {
		return err
	}
	s := session{Server: w.server, PartyID: k.PartyID, Token: tr.Token, ExpiresAt: tr.ExpiresAt}
	if err := writeJSONFile(w.tokenPath(), s, false); err != nil {
		return err
	}
	fmt.Fprintf(w.log, "signed in as %s until %s; token kept in %s\n", k.PartyID, time.Unix(tr.ExpiresAt, 0).Format(time.RFC3339), w.tokenPath())
	return printJSON(w.out, map[string]any{"partyId": k.PartyID, "expiresAt": tr.ExpiresAt})
}

func (w *cli) token() (string, error) {
	s, err := w.loadSession()
	if err != nil {
		return "", err
	}
	if s == nil {
		return "", fmt.Errorf("not signed in to %s; run: walletctl --key %s login", w.server, w.keyPath)
	}
	if time.Now().Unix() >= s.ExpiresAt {
		return "", fmt.Errorf("the token expired at %s; run: walletctl --key %s login", time.Unix(s.ExpiresAt, 0).Format(time.RFC3339), w.keyPath)
	}
	return s.Token, nil
}

func (w *cli) logout() error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if err := w.do("POST", "/api/auth/logout", nil, tok, nil); err != nil {
		return err
	}
	os.Remove(w.tokenPath())
	fmt.Fprintln(w.log, "signed out")
	return nil
}

func (w *cli) sign(args []string) error {
	_, priv, err := w.loadKey()
	if err != nil {
		return err
	}
	var msg []byte
	switch {
	case w.hash != "" && len(args) > 0: // flags may follow arguments: sign one or the other
		return errors.New("usage: walletctl sign MESSAGE | sign - | sign --hash B64")
	case w.hash != "":
		msg, err = base64.StdEncoding.DecodeString(w.hash)
		if err != nil || len(msg) != 32 {
			return errors.New("--hash wants the 32-byte preparedTransactionHash in standard base64")
		}
	case len(args) == 1 && args[0] == "-":
		if msg, err = io.ReadAll(os.Stdin); err != nil {
			return err
		}
	case len(args) == 1:
		msg = []byte(args[0])
	default:
		return errors.New("usage: walletctl sign MESSAGE | sign - | sign --hash B64")
	}
	_, err = fmt.Fprintln(w.out, base64.StdEncoding.EncodeToString(ed25519.Sign(priv, msg)))
	return err
}

func (w *cli) call(method, path, body string) error {
	tok, err := w.token()
	if err != nil {
		return err
	}
	if path, err = w.expandPath(path); err != nil {
		return err
	}
	var raw json.RawMessage
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	if err := w.do(method, path, b, tok, &raw); err != nil {
		return err
	}
	return printRaw(w.out, raw)
}

// executePath is where a prepared transaction of prepare path base is executed. Two
// endpoints do not follow the PATH/prepare, PATH/execute pattern.
func executePath(base string) string {
	switch {
	case strings.HasPrefix(base, "/api/nft/list/") && strings.HasSuffix(base, "/cancel"):
		return "/api/nft/list/cancel/execute"
	case base == "/api/swap":
		return "/api/swap/intent/submit"
	}
	return base + "/execute"
}

// exec prepares, checks and executes the transaction at path; want, when set, is what the
// transaction must do (a shortcut's intent), else only whom it acts as is checked.
func (w *cli) exec(path, body string, want intent) error {
	k, priv, err := w.loadKey()
	if err != nil {
		return err
	}
	tok, err := w.token()
	if err != nil {
		return err
	}
	if path, err = w.expandPath(path); err != nil {
		return err
	}
	base := strings.TrimSuffix(strings.TrimRight(path, "/"), "/prepare")
	res, err := w.prepareAndExecute(base+"/prepare", executePath(base), []byte(body), priv, tok, k.PartyID, want)
	if err != nil {
		return err
	}
	return printRaw(w.out, res)
}

// prepareAndExecute prepares, decodes the transaction it is asked to sign, shows what it does,
// checks it against want (nil: against partyID only), signs the hash and executes. The
// server's summary is never read: what is shown and checked is decoded from the signed bytes.
func (w *cli) prepareAndExecute(preparePath, executePath string, body []byte, priv ed25519.PrivateKey, tok, partyID string, want intent) (json.RawMessage, error) {
	var p struct {
		PreparedTransaction     string `json:"preparedTransaction"`
		PreparedTransactionHash string `json:"preparedTransactionHash"`
		HashingScheme           string `json:"hashingScheme"`
		ActAs                   string `json:"actAs"`
	}
	if err := w.do("POST", preparePath, body, tok, &p); err != nil {
		return nil, err
	}
	tx, err := base64.StdEncoding.DecodeString(p.PreparedTransaction)
	if err != nil {
		return nil, errors.New("the preparedTransaction is not base64; not signing")
	}
	hash := wallet.PreparedHash(tx)
	switch {
	case p.HashingScheme != wallet.HashingScheme:
		return nil, fmt.Errorf("unknown hashing scheme %q; not signing", p.HashingScheme)
	case base64.StdEncoding.EncodeToString(hash) != p.PreparedTransactionHash:
		return nil, errors.New("the hash is not the SHA-256 of the prepared transaction; not signing")
	case p.ActAs != partyID:
		return nil, fmt.Errorf("the transaction acts as %s, this key is %s; not signing", p.ActAs, partyID)
	}
	d, err := wallet.DecodePrepared(tx)
	if err != nil {
		return nil, fmt.Errorf("%v; not signing", err)
	}
	if d.ActAs != partyID {
		return nil, fmt.Errorf("the transaction acts as %s, this key is %s; not signing", d.ActAs, partyID)
	}
	printTransaction(w.log, p.PreparedTransactionHash, d, want == nil)
	if want != nil {
		if err := want(partyID, d); err != nil {
			return nil, err
		}
	}
	sig := ed25519.Sign(priv, hash)
	exec, _ := json.Marshal(map[string]string{"preparedTransactionHash": p.PreparedTransactionHash, "signature": base64.StdEncoding.EncodeToString(sig)})
	var res json.RawMessage
	err = w.do("POST", executePath, exec, tok, &res)
	// An execute applies at most once, so the same one is sent again when the service could
	// not say whether it applied (outcome_unknown), could not reach its database
	// (unavailable), or the answer never came.
	for attempt := 1; attempt <= executeRetries; attempt++ {
		wait, ok := retryable(err)
		if !ok {
			break
		}
		fmt.Fprintf(w.log, "execute: %v; sending the same execute again in %s\n", err, wait)
		time.Sleep(wait)
		err = w.do("POST", executePath, exec, tok, &res)
	}
	if err != nil {
		return nil, err
	}
	if err := w.keepReceipt(res, p.PreparedTransactionHash); err != nil {
		return nil, fmt.Errorf("executed, but keeping the receipt in %s: %v", w.receiptsPath(), err)
	}
	return res, nil
}

// executeRetries is how many times an execute is sent again after a fault.
const executeRetries = 10

// retryable says whether err leaves an execute worth sending again, and after how long.
func retryable(err error) (time.Duration, bool) {
	var api *apiError
	var transport *transportError
	switch {
	case errors.As(err, &api) && api.Status == http.StatusServiceUnavailable:
		return time.Duration(max(api.RetryAfter, 1)) * time.Second, true
	case errors.As(err, &transport):
		return time.Second, true
	}
	return 0, false
}

// transportError is a request that got no answer: the service may or may not have acted on it.
type transportError struct {
	server string
	err    error
}

func (e *transportError) Error() string {
	return fmt.Sprintf("cannot reach %s: %v (is marketd running? set --server)", e.server, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// apiError is a problem+json answer.
type apiError struct {
	Status     int    `json:"status"`
	Code       string `json:"code"`
	Detail     string `json:"detail"`
	RetryAfter int    `json:"-"` // seconds, from Retry-After
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Detail) }

// do calls the service and decodes a 2xx JSON answer into out; any other answer is an error
// that says what the server said.
func (w *cli) do(method, path string, body []byte, tok string, out any) error {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, w.server+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := w.http.Do(req)
	if err != nil {
		return &transportError{server: w.server, err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		e := &apiError{Status: res.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Code == "" {
			e.Code, e.Detail = "error", strings.TrimSpace(string(b))
		}
		if ra := res.Header.Get("Retry-After"); ra != "" {
			e.Detail += " (retry after " + ra + "s)"
			e.RetryAfter, _ = strconv.Atoi(ra)
		}
		return e
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = b
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("unexpected answer from %s %s: %v", method, path, err)
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func printRaw(w io.Writer, b []byte) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	var out bytes.Buffer
	if json.Indent(&out, bytes.TrimSpace(b), "", "  ") != nil {
		_, err := w.Write(b)
		return err
	}
	_, err := fmt.Fprintln(w, out.String())
	return err
}

// warnPlainHTTP warns when the server is reached over plain http anywhere but this machine:
// anyone on the path can then read the session token and change what the server is asked.
// walletctl still refuses to sign what a shortcut was not asked, but calls and reads are not
// protected.
func warnPlainHTTP(log io.Writer, server string) {
	u, err := url.Parse(server)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return
	}
	fmt.Fprintf(log, "warning: %s is plain http to a host other than this machine: anyone on the path can read your session token and change requests and answers; use https\n", server)
}

// checkChallenge refuses, before anything is signed, a challenge that is not the one this
// login asked for: each field on its own, every mismatch named. A relay that forwards to the
// real service gets a challenge naming the service's domain; signing it would hand the relay a
// session, so a domain or URI other than --server's is refused unless the user names it
// (--accept-domain, --accept-uri, for a proxy of their own).
func (w *cli) checkChallenge(c wallet.Challenge, party, nonce string, now time.Time) error {
	u, err := url.Parse(w.server)
	if err != nil {
		return fmt.Errorf("--server %q: %v", w.server, err)
	}
	domain, uri := u.Host, w.server
	if w.acceptDomain != "" {
		domain = w.acceptDomain
	}
	if w.acceptURI != "" {
		uri = strings.TrimRight(w.acceptURI, "/")
	}
	var wrong []string
	if c.Domain != domain {
		wrong = append(wrong, fmt.Sprintf("domain %s, not %s (a relay? --accept-domain %s if it is your own proxy)", c.Domain, domain, c.Domain))
	}
	if strings.TrimRight(c.URI, "/") != uri {
		wrong = append(wrong, fmt.Sprintf("URI %s, not %s", c.URI, uri))
	}
	if c.Network != w.network {
		wrong = append(wrong, fmt.Sprintf("network %s, not %s (--network)", c.Network, w.network))
	}
	if c.PartyID != party {
		wrong = append(wrong, fmt.Sprintf("party %s, not %s", c.PartyID, party))
	}
	if c.Nonce != nonce {
		wrong = append(wrong, fmt.Sprintf("nonce %s, not the %s returned with it", c.Nonce, nonce))
	}
	// A challenge lives ten minutes; one already expired, or issued far from now, is not this one.
	const skew = 2 * time.Minute
	if !c.ExpiresAt.After(now) || c.ExpiresAt.After(now.Add(10*time.Minute+skew)) || c.IssuedAt.After(now.Add(skew)) {
		wrong = append(wrong, fmt.Sprintf("issued %s, expiring %s: not a challenge issued now", c.IssuedAt.Format(time.RFC3339), c.ExpiresAt.Format(time.RFC3339)))
	}
	if len(wrong) > 0 {
		return fmt.Errorf("refusing to sign the challenge: it names %s", strings.Join(wrong, "; "))
	}
	return nil
}
