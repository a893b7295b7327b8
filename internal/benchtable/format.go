package main

import (
	"math"
	"strconv"
	"strings"
)

// number writes v with sig significant digits and no exponent: a whole number as it
// is, thousands separated by commas (1,240), a fraction with as many decimals as the
// digits need (8.93, 14.7, 0.473).
func number(v float64, sig int) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	mag := int(math.Floor(math.Log10(math.Abs(v))))
	step := math.Pow(10, float64(mag-sig+1))
	r := math.Round(v/step) * step
	if r != 0 && int(math.Floor(math.Log10(math.Abs(r)))) > mag { // 9.996 → 10.0
		mag++
	}
	if v == math.Trunc(v) || mag >= sig-1 {
		return thousands(int64(math.Round(r)))
	}
	return strconv.FormatFloat(r, 'f', sig-1-mag, 64)
}

// thousands writes n with a comma every three digits.
func thousands(n int64) string {
	sign := ""
	if n < 0 {
		sign, n = "-", -n
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}
