package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"marketd/cmd/internal/cmdline"
	"marketd/rest"
	"marketd/store"
	"marketd/store/clientaddr"
	"marketd/store/translog"
	"marketd/store/wallet"
)

// config is every setting of the service. Each is a flag and a MARKETD_ variable: the
// variable wins over the default, the flag over both. serve reads them all; an operator
// command only those its entry in the command table names.
type config struct {
	addr           string
	store          store.Config
	kekFile        string
	dev            bool
	allowedOrigins []string
	rateRead       int
	ratePrepare    int
	ratePrepareAdr int
	rateSignIn     int
	rateExecute    int
	trustedProxies clientaddr.Proxies
	witnessLogs    map[string]*translog.WitnessedLog // the logs POST /witness/add-checkpoint cosigns, by origin
	witnesses      []store.Witness                   // the witnesses the log asks for cosignatures
	drainDelay     time.Duration
	metricsAddr    string
	redis          string
	logLevel       string
}

// setting is one flag with its environment variable and default.
type setting struct {
	name, env, def, usage string
	set                   func(string) error
}

func settings(c *config) []setting {
	d := store.DefaultConfig()
	str := func(dst *string) func(string) error { return func(v string) error { *dst = v; return nil } }
	dur := func(dst *time.Duration) func(string) error {
		return func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				return fmt.Errorf("want a positive Go duration such as 10m")
			}
			*dst = x
			return nil
		}
	}
	// zeroIsOff parses a duration of which 0s turns the feature off: the store's -1, its zero
	// being its default.
	zeroIsOff := func(dst *time.Duration, example string) func(string) error {
		return func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 {
				return fmt.Errorf("want a Go duration such as %s, or 0s for none", example)
			}
			*dst = x
			if x == 0 {
				*dst = -1
			}
			return nil
		}
	}
	num := func(dst *int) func(string) error {
		return func(v string) error {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 {
				return fmt.Errorf("want a whole number >= 0")
			}
			*dst = x
			return nil
		}
	}
	return []setting{
		{"addr", "MARKETD_ADDR", "127.0.0.1:8080", "listen address", str(&c.addr)},
		{"db", "MARKETD_DB", d.DB, "store: postgres://... or sqlite://PATH or sqlite://:memory:", str(&c.store.DB)},
		{"kek-file", "MARKETD_KEK_FILE", "", "file of the key-encryption key the store's secrets are sealed under: 32 random bytes as base64 on one line " +
			"(head -c 32 /dev/urandom | base64); empty: marketd.kek in the embedded store's folder (./data in dev mode), made on the first start; " +
			"required on PostgreSQL outside dev mode", str(&c.kekFile)},
		{"public-url", "MARKETD_PUBLIC_URL", d.PublicURL, "public URL: the challenge's URI; its authority is the domain", str(&c.store.PublicURL)},
		{"network", "MARKETD_NETWORK", d.Network, "the challenge's Network line", str(&c.store.Network)},
		{"dev", "MARKETD_DEV", "", "dev mode (1 = on): the tap faucet, cookies over plain http; refused with an https public URL", func(v string) error {
			switch v {
			case "", "0":
				c.dev = false
			case "1":
				c.dev = true
			default:
				return fmt.Errorf("want 1 or 0")
			}
			return nil
		}},
		{"allowed-origins", "MARKETD_ALLOWED_ORIGINS", "", "comma-separated origins that may also write with the cookie", func(v string) error {
			c.allowedOrigins = nil
			for _, o := range strings.Split(v, ",") {
				if o = strings.TrimSpace(o); o != "" {
					c.allowedOrigins = append(c.allowedOrigins, o)
				}
			}
			return nil
		}},
		{"statement", "MARKETD_STATEMENT", "", "the challenge's statement line", func(v string) error {
			if v != "" && !wallet.ValidStatement(v) {
				return fmt.Errorf("want one line of text without leading or trailing space")
			}
			c.store.Statement = v
			return nil
		}},
		{"market-fee-bps", "MARKETD_MARKET_FEE_BPS", "250", "marketplace fee on NFT sales, basis points (at most 5000)", func(v string) error {
			x, err := strconv.Atoi(v)
			if err != nil || x < 0 || x > store.MaxRoyaltyBps {
				return fmt.Errorf("want a whole number from 0 to %d", store.MaxRoyaltyBps)
			}
			c.store.MarketFeeBps = x
			return nil
		}},
		{"challenge-ttl", "MARKETD_CHALLENGE_TTL", d.ChallengeTTL.String(), "challenge lifetime", dur(&c.store.ChallengeTTL)},
		{"token-ttl", "MARKETD_TOKEN_TTL", d.TokenTTL.String(), "token lifetime from its own issue", dur(&c.store.TokenTTL)},
		{"rotate-after", "MARKETD_ROTATE_AFTER", d.RotateAfter.String(), "token age that triggers cookie rotation", dur(&c.store.RotateAfter)},
		{"rotate-grace", "MARKETD_ROTATE_GRACE", d.RotateGrace.String(), "how long a superseded token is still accepted", dur(&c.store.RotateGrace)},
		{"session-max", "MARKETD_SESSION_MAX", d.SessionMax.String(), "a session's absolute lifetime from its sign-in, however often it rotates (at most 24h)", func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 || x > store.MaxSessionMax {
				return fmt.Errorf("want a positive Go duration of at most %s, such as 12h", store.MaxSessionMax)
			}
			c.store.SessionMax = x
			return nil
		}},
		{"prepared-ttl", "MARKETD_PREPARED_TTL", d.PreparedTTL.String(), "how long a prepared transaction can be executed", dur(&c.store.PreparedTTL)},
		{"preapproval-ttl", "MARKETD_PREAPPROVAL_TTL", d.PreapprovalTTL.String(), "how long a receive-preapproval lasts from creation or renewal", dur(&c.store.PreapprovalTTL)},
		{"page-cache-ttl", "MARKETD_PAGE_CACHE_TTL", "1s", "how long a page of collections or NFTs is served from memory at most (writes and expiries end it sooner); 0s = no page cache", zeroIsOff(&c.store.PageCacheTTL, "1s")},
		{"db-admission-wait", "MARKETD_DB_ADMISSION_WAIT", store.DefaultAdmissionWait.String(), "when all database connections are busy, a request queues for one while the pool, at the pace it has been serving, serves the queue ahead of it within this bound and the queue keeps moving; otherwise it is refused 503 unavailable; 0s = as long as it takes", zeroIsOff(&c.store.AdmissionWait, "1s")},
		{"nft-index", "MARKETD_NFT_INDEX", "on", "on: serve NFT pages from the in-memory NFT index (/readyz fails until it is built); off: by SQL queries", func(v string) error {
			switch v {
			case "on", "off":
				c.store.NFTIndexOff = v == "off"
				return nil
			}
			return fmt.Errorf("want on or off")
		}},
		{"rate-read", "MARKETD_RATE_READ", "300", "read requests per minute per origin; 0 = unlimited", num(&c.rateRead)},
		{"rate-prepare", "MARKETD_RATE_PREPARE", "60", "prepare requests per minute per party; 0 = unlimited", num(&c.ratePrepare)},
		{"rate-prepare-address", "MARKETD_RATE_PREPARE_ADDRESS", "600", "prepare requests per minute per client address, over all the parties it signs in as; 0 = unlimited", num(&c.ratePrepareAdr)},
		{"rate-signin", "MARKETD_RATE_SIGNIN", strconv.Itoa(rest.DefaultRateSignIn), "sign-in requests (nonce, verify, onboarding prepare and execute) per minute per client address; 0 = unlimited", num(&c.rateSignIn)},
		{"rate-execute", "MARKETD_RATE_EXECUTE", strconv.Itoa(rest.DefaultRateExecute), "executes (and swap intent submits) per minute per client address; 0 = unlimited", num(&c.rateExecute)},
		{"witness-logs", "MARKETD_WITNESS_LOGS", "", "space- or comma-separated note verifier keys (<origin>+<hash>+<key>) of the transparency logs this service witnesses at POST /witness/add-checkpoint; empty: none", func(v string) error {
			c.witnessLogs = map[string]*translog.WitnessedLog{}
			for _, k := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				l, err := translog.NewWitnessedLog(k)
				if err != nil {
					return err
				}
				if have := c.witnessLogs[l.Origin]; have != nil {
					l.Verifiers = append(have.Verifiers, l.Verifiers...)
				}
				c.witnessLogs[l.Origin] = l
			}
			return nil
		}},
		{"witnesses", "MARKETD_WITNESSES", "", "space- or comma-separated witnesses this service's log asks to cosign its checkpoints, each <cosignature verifier key>@<submission URL> (the URL before /add-checkpoint); empty: none", func(v string) error {
			c.witnesses = nil
			for _, w := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				x, err := store.ParseWitness(w)
				if err != nil {
					return err
				}
				c.witnesses = append(c.witnesses, x)
			}
			return nil
		}},
		{"trusted-proxies", "MARKETD_TRUSTED_PROXIES", "", "comma-separated addresses or CIDRs of proxies whose X-Forwarded-For names the client", func(v string) error {
			proxies, err := clientaddr.ParseProxies(strings.Split(v, ","))
			if err != nil {
				return err
			}
			c.trustedProxies = proxies
			return nil
		}},
		{"drain-delay", "MARKETD_DRAIN_DELAY", "5s", "on SIGTERM, how long /readyz fails before the listener closes (0s = at once)", func(v string) error {
			x, err := time.ParseDuration(v)
			if err != nil || x < 0 {
				return fmt.Errorf("want a Go duration >= 0 such as 5s")
			}
			c.drainDelay = x
			return nil
		}},
		{"metrics-addr", "MARKETD_METRICS_ADDR", "", "serve /metrics here instead of on the API's address; empty: on the API's address, answering only a loopback peer with no X-Forwarded-For or Forwarded header (404 to anyone else)", str(&c.metricsAddr)},
		{"redis", "MARKETD_REDIS", "", "redis://...: keep rate-limit windows in Redis, shared by every instance; empty = in memory", func(v string) error {
			if v != "" && !strings.HasPrefix(v, "redis://") && !strings.HasPrefix(v, "rediss://") && !strings.HasPrefix(v, "unix://") {
				return fmt.Errorf("want redis://host:port[/db], rediss://... or unix://PATH")
			}
			c.redis = v
			return nil
		}},
		{"log-level", "MARKETD_LOG_LEVEL", "info", "debug, info, warn or error", func(v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.logLevel = v
				return nil
			}
			return fmt.Errorf("want debug, info, warn or error")
		}},
	}
}

// parseConfig reads the environment, then args, into a config: the settings cmd reads (every
// one for serve), each a flag and a MARKETD_ variable; the rest keep their defaults. extra adds
// the command's own flags. -h prints the command's help on standard output and returns
// flag.ErrHelp; a flag that does not parse is a *cmdline.UsageError.
func parseConfig(cmd string, args []string, extra ...func(fs *flag.FlagSet)) (*config, []string, error) {
	spec, ok := commandNamed(cmd)
	if !ok {
		return nil, nil, fmt.Errorf("unknown command %q", cmd)
	}
	c := new(config)
	fs := flag.NewFlagSet("marketd "+cmd, flag.ContinueOnError)
	own := flag.NewFlagSet("marketd "+cmd, flag.ContinueOnError) // the command's own flags, for its help
	for _, add := range extra {
		add(own)
		add(fs)
	}
	var read []setting
	for _, s := range settings(c) {
		def := s.def
		if !spec.reads(s.name) {
			if err := s.set(def); err != nil {
				panic(fmt.Sprintf("marketd: the default of -%s does not parse: %v", s.name, err))
			}
			continue
		}
		read = append(read, s)
		if v, ok := os.LookupEnv(s.env); ok {
			def = v
		}
		if err := s.set(def); err != nil {
			return nil, nil, fmt.Errorf("%s=%q: %v", s.env, def, err)
		}
		fs.Func(s.name, fmt.Sprintf("%s (env %s, default %q)", s.usage, s.env, s.def), s.set)
	}
	rest, err := cmdline.Parse("marketd", spec.Command, fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(os.Stdout, spec, own, read)
	}
	if err != nil {
		return nil, nil, err
	}
	return c, rest, nil
}

// checkDev refuses dev mode behind an https public URL: the tap faucet gives coins to anyone
// and cookies may travel over plain http, which is for a developer's machine, and an https
// URL says the service is deployed.
func (c *config) checkDev() error {
	if !c.dev {
		return nil
	}
	if u, err := url.Parse(c.store.PublicURL); err == nil && strings.EqualFold(u.Scheme, "https") {
		return fmt.Errorf("MARKETD_DEV=1 with an https MARKETD_PUBLIC_URL (%s): dev mode (the tap faucet, cookies over plain http) is for a developer's machine; unset MARKETD_DEV to serve there", c.store.PublicURL)
	}
	return nil
}
