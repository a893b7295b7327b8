package classify

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// The helpers in this file read loosely typed values out of tool results
// and error details. Those maps come from JSON decoding (float64,
// json.Number, strings) or from Go code (any integer type), so each helper
// accepts all of those forms and reports false for anything else rather
// than guessing.

// asInt returns v as a whole number.
func asInt(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return uintToInt(uint64(v))
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		return uintToInt(v)
	case float32:
		return floatToInt(float64(v))
	case float64:
		return floatToInt(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, true
		}
		f, err := v.Float64()
		if err != nil {
			return 0, false
		}
		return floatToInt(f)
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func uintToInt(u uint64) (int64, bool) {
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// floatToInt accepts only integral floats inside the int64 range.
func floatToInt(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false // also rejects NaN and ±Inf
	}
	return int64(f), true
}

// asSeconds reads v as a non-negative number of seconds, fractions allowed.
func asSeconds(v any) (time.Duration, bool) {
	var f float64
	switch x := v.(type) {
	case float32:
		f = float64(x)
	case float64:
		f = x
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	case string:
		g, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			return 0, false
		}
		f = g
	default:
		n, ok := asInt(v)
		if !ok || n < 0 || n > maxSeconds {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	// The upper bound keeps f*1e9 below MaxInt64, where converting a float
	// to an integer would be undefined. NaN fails both comparisons.
	if !(f >= 0 && f < float64(maxSeconds)) {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// nonEmpty reports whether an "error" value actually carries an error:
// false for nil, "", false, zero numbers and empty collections.
func nonEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case string:
		return strings.TrimSpace(v) != ""
	case bool:
		return v
	case map[string]any:
		return len(v) > 0
	case []any:
		return len(v) > 0
	case float64:
		return v != 0
	case json.Number:
		return v != "" && v != "0"
	}
	if n, ok := asInt(v); ok {
		return n != 0
	}
	return true
}
