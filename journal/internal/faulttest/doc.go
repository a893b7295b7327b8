// Package faulttest holds the journal tests that inject faults below the journal's
// store interface (journal/internal/store), which only code under journal/ can name.
// They run on both backends, so they cannot live in package journal's own tests (a
// core package's tests must not import a database driver: a user's go.sum would list
// it) nor in the test/ module (which cannot import journal/internal). The package has
// no code of its own and nothing imports it.
package faulttest
