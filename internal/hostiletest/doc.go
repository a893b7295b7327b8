// Package hostiletest holds the end-to-end test of issue 11: a corpus of hostile
// upstream text (prompt injections, secrets of each common shape, HTML and script,
// terminal escapes and other control characters, invalid UTF-8, a 1 MB body) driven
// through the real adk-go runner, and a search for its distinctive tokens in
// everything the model, the operator and the pager can see. Its only code is the
// corpus and the search (corpus.go), which other packages' tests use too; the test
// lives apart because it imports every package of the module.
package hostiletest
