package bound

import (
	"iter"
	"slices"
)

// SyncErrorRow is one row of the fleet's sync-error counter.
type SyncErrorRow struct {
	Class string
	Count float64
}

// SyncErrorRows returns at most max rows of a fleet's sync errors by class, each class
// sanitised (Sanitize); classes that sanitise to the same label are summed into one
// row, so that a collection never exports one series twice.
func SyncErrorRows(errs iter.Seq2[string, int64], max int) []SyncErrorRow {
	var rows []SyncErrorRow
	seen := 0
	for class, n := range errs {
		if seen == max {
			break
		}
		seen++
		label := Sanitize(class)
		if i := slices.IndexFunc(rows, func(r SyncErrorRow) bool { return r.Class == label }); i >= 0 {
			rows[i].Count += float64(n)
			continue
		}
		rows = append(rows, SyncErrorRow{Class: label, Count: float64(n)})
	}
	return rows
}
