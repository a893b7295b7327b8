// Package nilness tells an interface value that holds a nil pointer from one that holds
// something. A program that builds a part only in some configurations (a *fleet.Fleet
// only when Redis is configured) and hands the variable to an interface-typed field
// gives a non-nil interface around a nil pointer; the packages that take such fields
// treat it as "not configured", as the nil interface is.
package nilness

import "reflect"

// Absent reports whether v is nil or holds a nil pointer, map, slice, func or channel.
func Absent(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
