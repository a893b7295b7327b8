package depfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Apply reads the dependency file at path and applies its policies to the running map
// m (dependencymap.Map.Apply). It is all or nothing: a file with a problem changes
// nothing and gives an *Error naming the file and each problem's line.
func Apply(m *dependencymap.Map, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("dependencymap: %w", err)
	}
	return ApplyBytes(m, path, data)
}

// ApplyBytes is Apply for a file's contents; name, the file's name, is quoted in errors
// and tells JSON (.json) from YAML. A name without either extension is read as JSON
// when data starts with '{', else as YAML.
func ApplyBytes(m *dependencymap.Map, name string, data []byte) error {
	ext := strings.ToLower(filepath.Ext(name))
	isJSON := ext == ".json" || ext != ".yaml" && ext != ".yml" && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))
	d := parse(name, data, isJSON)
	cfg, err := d.Config()
	if err != nil {
		return err
	}
	if err := m.Apply(cfg); err != nil {
		return d.mapError(err)
	}
	return nil
}

// mapError turns a refusal of Map.Apply into an *Error in the file's terms, positioned
// at the key it names.
func (d *Document) mapError(err error) error {
	var ce *agentbreaker.ConfigError
	if !errors.As(err, &ce) {
		return &Error{File: d.Name, Problems: []Problem{{Message: err.Error()}}}
	}
	path := fileKey(ce.Field)
	line, col := d.Position(path)
	return &Error{File: d.Name, Problems: []Problem{{Path: path, Line: line, Column: col, Value: ce.Value, Message: ce.Problem}}}
}

var (
	goKey    = regexp.MustCompile(`\["([^"]*)"\]`)
	capitals = regexp.MustCompile(`([a-z0-9])([A-Z])`)
)

// fileKey is the file's path for a dependencymap.Config field:
// Dependencies["crm"].Tools -> dependencies.crm.tools, MaxDependencies -> max_dependencies.
func fileKey(field string) string {
	return strings.ToLower(capitals.ReplaceAllString(goKey.ReplaceAllString(field, ".$1"), "${1}_$2"))
}

// DefaultWatchInterval is the default of WatchConfig.Interval.
const DefaultWatchInterval = 2 * time.Second

// WatchConfig configures Watch.
type WatchConfig struct {
	// Interval is how often the file's content hash is compared with the last one
	// applied. At least 10ms. Defaults to DefaultWatchInterval.
	Interval time.Duration
	// Sleep waits for d or for ctx to be done; Watch sleeps with it between checks.
	// Defaults to a real timer. A test gives one that returns when it says so.
	Sleep func(ctx context.Context, d time.Duration) error
	// Signals reloads the file on every value received, whatever its hash. Defaults to
	// SIGHUP sent to the process (signal.Notify).
	Signals <-chan os.Signal
	// OnReload is called after every reload with its outcome: the error (nil when the
	// file was applied) and the map's PolicyVersion after it. Defaults to none.
	OnReload func(version string, err error)
	// Logger receives a record per reload: INFO when the file was applied, ERROR when
	// it was refused. Defaults to slog.Default().
	Logger *slog.Logger
}

// Watch reloads the dependency file at path into m whenever its contents change (a
// hash checked every Interval) or a signal arrives (SIGHUP by default), until ctx is
// done; it returns ctx's error. The file as it is when Watch starts is taken to be the
// one in force. A reload that fails leaves the old policies in force and is logged;
// Watch goes on watching.
func Watch(ctx context.Context, path string, m *dependencymap.Map, cfg WatchConfig) error {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultWatchInterval
	}
	if cfg.Interval < 10*time.Millisecond {
		return &agentbreaker.ConfigError{Package: "depfile", Field: "Interval", Value: cfg.Interval, Problem: "must be at least 10ms"}
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleep
	}
	if cfg.Signals == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGHUP)
		defer signal.Stop(ch)
		cfg.Signals = ch
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	var mu sync.Mutex // one reload at a time
	last := hashFile(path)
	check := func(force bool) {
		mu.Lock()
		defer mu.Unlock()
		if h := hashFile(path); h != last || force {
			last = h
			reload(m, path, cfg)
		}
	}
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for cfg.Sleep(ctx, cfg.Interval) == nil {
			check(false)
		}
	}()
	for {
		select {
		case <-ctx.Done():
			<-polled
			return ctx.Err()
		case <-cfg.Signals:
			check(true)
		}
	}
}

// reload applies the file once and reports the outcome.
func reload(m *dependencymap.Map, path string, cfg WatchConfig) {
	old := m.PolicyVersion()
	err := Apply(m, path)
	if err != nil {
		cfg.Logger.Error("agentbreaker: dependency file refused; the old policy stays in force",
			"file", path, "policy_version", old, "error", err.Error())
	} else {
		cfg.Logger.Info("agentbreaker: dependency file applied", "file", path,
			"old_policy_version", old, "policy_version", m.PolicyVersion())
	}
	if cfg.OnReload != nil {
		cfg.OnReload(m.PolicyVersion(), err)
	}
}

// hashFile is the hash of the file's contents; a file that cannot be read hashes as
// empty, so it is reloaded (and its error reported) when it can be read again.
func hashFile(path string) [sha256.Size]byte {
	data, _ := os.ReadFile(path)
	return sha256.Sum256(data)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
