package docs

import (
	"fmt"
	"strconv"
	"strings"
)

// TuneCmd is the run of docs/tuning.md that its figures come from.
const TuneCmd = `agentbreaker tune -month 1 -top 3 -png "$OUT"`

// tuneFolds reads the "all folds" row of a dependency in tune's output: dead calls
// sent, healthy calls refused and false trips, each for tune's choices and the base.
func tuneFolds(out []byte, dep string) ([6]int, error) {
	var v [6]int
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		in = in || strings.HasPrefix(line, dep+": ")
		f := strings.Fields(line)
		if !in || len(f) != 8 || f[0] != "all" || f[1] != "folds" {
			continue
		}
		for i := range v {
			n, err := strconv.Atoi(f[2+i])
			if err != nil {
				return v, err
			}
			v[i] = n
		}
		return v, nil
	}
	return v, fmt.Errorf("no all-folds row for %s in tune's output", dep)
}

// The held-out comparison of docs/tuning.md: tune.<dep>.<held|base>_<dead|refused|false>,
// and tune.<dep>.verdict, which says in words whether tune did better than the base.
func init() {
	cols := []string{"held_dead", "base_dead", "held_refused", "base_refused", "held_false", "base_false"}
	for _, dep := range []string{"crm", "invoices"} {
		for i, col := range cols {
			figures["tune."+dep+"."+col] = figure{cmd: TuneCmd, value: func(out []byte) (string, error) {
				v, err := tuneFolds(out, dep)
				return thousands(v[i]), err
			}}
		}
		figures["tune."+dep+".verdict"] = figure{cmd: TuneCmd, value: func(out []byte) (string, error) {
			v, err := tuneFolds(out, dep)
			return tuneVerdict(v), err
		}}
	}
}

func tuneVerdict(v [6]int) string {
	dead := "fewer calls to the dead dependency"
	if v[0] >= v[1] {
		dead = "no fewer calls to the dead dependency"
	}
	switch {
	case v[4] <= v[5]:
		return dead + " and no more false trips"
	default:
		return fmt.Sprintf("%s, but more false trips (%d against %d)", dead, v[4], v[5])
	}
}
