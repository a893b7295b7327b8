// Command production is an adk-go agent wired for production with agentbreaker:
// model failover from Gemini to an OpenAI-compatible route, a CRM tool over HTTP and
// a mutating CRM tool whose calls carry an idempotency key and are journaled in
// SQLite, a health probe, the turn deadline, Prometheus metrics and the admin page on
// one port, and fleet mode when REDIS_ADDR is set. Its agentbreaker wiring is the 40
// lines between the markers in wiring.go; the rest is the program around it.
//
// With no flags it runs offline, with no network and no API key: it starts a local
// CRM, a local Gemini endpoint and a local OpenAI-compatible endpoint, drives a short
// outage of the CRM and of the Gemini route on a fake clock, prints what happened and
// where to look, and exits:
//
//	go run ./examples/production
//	go run ./examples/production -serve   # keep serving /metrics and /admin/ afterwards
//
// With -live it uses real endpoints instead (CRM_URL; GOOGLE_API_KEY or
// GEMINI_API_KEY; OPENAI_API_KEY and OPENAI_BASE_URL, read by openai-go), on the
// system clock, and answers one question per line of standard input.
//
// The admin page's token is AGENTBREAKER_ADMIN_TOKEN, or one generated for the run
// and printed. docs/operations.md#a-whole-production-program describes it.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil && !errors.Is(err, flag.ErrHelp) {
		log.Fatal(err)
	}
}

// options are the program's flags.
type options struct {
	serve    bool
	live     bool
	addr     string
	dataDir  string
	fleetApp string
	logLevel slog.Level
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("production", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.BoolVar(&o.serve, "serve", false, "keep serving /metrics and /admin/ after the offline story, until interrupted")
	fs.BoolVar(&o.live, "live", false, "use the real endpoints (CRM_URL, Gemini and OpenAI keys) instead of local fakes")
	fs.StringVar(&o.addr, "addr", "127.0.0.1:9464", "the operations listener: /metrics and /admin/")
	fs.StringVar(&o.fleetApp, "fleet-app", appName, "fleet mode: the name every replica of this agent shares in Redis")
	fs.StringVar(&o.dataDir, "data", "", "directory of the journal's SQLite file (default: a temporary directory, removed at exit)")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelWarn, "level of agentbreaker's log records on stderr")
	return o, fs.Parse(args)
}

// run is the program: flags in args, the story and the addresses on stdout.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: o.logLevel}))
	if o.dataDir == "" {
		if o.dataDir, err = os.MkdirTemp("", "agentbreaker-production-"); err != nil {
			return err
		}
		defer os.RemoveAll(o.dataDir)
	}
	token, tokenSource, err := adminToken()
	if err != nil {
		return err
	}
	s := settings{log: logger, dataDir: o.dataDir, redisAddr: os.Getenv("REDIS_ADDR"), fleetApp: o.fleetApp, token: token}
	var w *world
	if o.live {
		err = liveSettings(&s)
	} else {
		w, err = startWorld(stdout, &s)
		defer w.close()
	}
	if err != nil {
		return err
	}
	if s.redisAddr == "" {
		fmt.Fprintln(stdout, "fleet mode: off (REDIS_ADDR is not set); each process's breakers decide alone")
	} else {
		fmt.Fprintf(stdout, "fleet mode: on, through Redis at %s\n", s.redisAddr)
	}
	return serve(ctx, o, s, w, tokenSource, stdout)
}

// serve wires the agent, serves the operations port, tells the offline story or
// answers standard input, and says where to look.
func serve(ctx context.Context, o options, s settings, w *world, tokenSource string, stdout io.Writer) error {
	crm := crmClient{base: s.crmURL, http: &http.Client{Timeout: 30 * time.Second}}
	lookup, note, err := crm.tools()
	if err != nil {
		return err
	}
	a, err := wire(ctx, s, lookup, note, crm)
	if err != nil {
		return err
	}
	defer a.close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.ops, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed at shutdown
	defer srv.Close()
	if w != nil {
		if err := w.tell(ctx, a); err != nil {
			return err
		}
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintln(stdout, "where to look:")
	fmt.Fprintf(stdout, "  metrics:    %s/metrics\n", base)
	fmt.Fprintf(stdout, "  admin page: %s/admin/ (token %s)\n", base, tokenSource)
	fmt.Fprintf(stdout, "  journal:    %s\n", s.dataDir)
	if w != nil {
		fmt.Fprintf(stdout, "  CRM counts: %s/stats\n", s.crmURL)
	}
	switch {
	case o.live:
		return answer(ctx, a, os.Stdin, stdout)
	case o.serve:
		fmt.Fprintln(stdout, "serving until interrupted")
		<-ctx.Done()
	}
	return nil
}

// adminToken returns the admin page's token and where it came from.
func adminToken() (token, source string, err error) {
	if t := os.Getenv("AGENTBREAKER_ADMIN_TOKEN"); t != "" {
		return t, "from AGENTBREAKER_ADMIN_TOKEN", nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	t := base64.RawURLEncoding.EncodeToString(b)
	return t, "generated for this run: " + t + " (set AGENTBREAKER_ADMIN_TOKEN to choose it)", nil
}

// liveSettings points s at the real endpoints, from the environment.
func liveSettings(s *settings) error {
	s.crmURL = os.Getenv("CRM_URL")
	if s.crmURL == "" {
		return errors.New("production: -live needs the CRM's base URL in CRM_URL")
	}
	s.gemini = func(wrap func(http.RoundTripper) http.RoundTripper) *genai.ClientConfig {
		// genai reads the API key from GOOGLE_API_KEY or GEMINI_API_KEY.
		return &genai.ClientConfig{Backend: genai.BackendGeminiAPI, HTTPClient: &http.Client{Transport: wrap(nil)}}
	}
	return nil // openai-go reads OPENAI_API_KEY and OPENAI_BASE_URL
}

// answer runs one turn per line of in, under the turn deadline, and prints the answer.
func answer(ctx context.Context, a *app, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		q := strings.TrimSpace(sc.Text())
		if q == "" {
			continue
		}
		text, err := ask(ctx, a, q)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, text)
	}
	return sc.Err()
}

// ask runs one turn in a new session and returns the agent's words.
func ask(ctx context.Context, a *app, q string) (string, error) {
	created, err := a.sessions.Create(ctx, &session.CreateRequest{AppName: appName, UserID: "operator"})
	if err != nil {
		return "", err
	}
	res, err := a.turn.Run(ctx, "operator", created.Session.ID(), genai.NewContentFromText(q, genai.RoleUser))
	if err != nil {
		return "", err
	}
	var words []string
	for _, ev := range res.Events {
		if ev.Content != nil && ev.Author == "assistant" {
			for _, p := range ev.Content.Parts {
				if p.Text != "" {
					words = append(words, p.Text)
				}
			}
		}
	}
	return strings.Join(words, " "), nil
}
