package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestListing lists testdata/fix, a module with one of each kind of feature, and
// compares the listing with testdata/fix.txt. The module's go.mod is written into a
// copy: a go.mod under testdata would make it a module of its own, which a module zip
// may not hold (bench/usergraph.sh builds one from the tree).
func TestListing(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "fix"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/fix\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := run(&got, dir); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "fix.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("listing of testdata/fix:\n%s\nwant testdata/fix.txt:\n%s", got.Bytes(), want)
	}
}
