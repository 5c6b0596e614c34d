package conformance

import (
	"fmt"
	"strings"
)

// MapsIterateSorted ranges over a map and sorts what it saw.
func MapsIterateSorted() string {
	labels := map[string]string{"app": "db", "tier": "data", "owner": "shop"}
	var keys []string
	for k := range labels {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + labels[k] + ";")
	}
	return b.String()
}

// MapsDeleteDuringRange deletes every entry while ranging.
func MapsDeleteDuringRange() string {
	m := map[int]bool{1: true, 2: true, 3: true, 4: true}
	seen := 0
	for k := range m {
		delete(m, k)
		seen++
	}
	return fmt.Sprint(seen, len(m))
}

// MapsMissingKeys reads keys that are not there.
func MapsMissingKeys() string {
	var nilMap map[string]int
	m := map[string][]string{}
	m["a"] = append(m["a"], "x")
	m["a"] = append(m["a"], "y")
	_, ok := m["b"]
	type conf struct{ replicas int }
	byName := map[string]conf{"shop": {3}}
	return fmt.Sprint(nilMap["x"], len(nilMap), m["a"], len(m["b"]), ok, byName["shop"].replicas, byName["none"].replicas)
}

// MapsOfPointers changes values through stored pointers.
func MapsOfPointers() string {
	type db struct{ ready bool }
	m := map[string]*db{"a": {}, "b": {}}
	for _, d := range m {
		d.ready = true
	}
	n := 0
	for _, d := range m {
		if d.ready {
			n++
		}
	}
	return fmt.Sprint(n)
}

// MapsNested builds and reads a map of maps.
func MapsNested() string {
	m := map[string]map[string]int{}
	for _, p := range []string{"a/x", "a/y", "b/x"} {
		ns, name, _ := strings.Cut(p, "/")
		if m[ns] == nil {
			m[ns] = map[string]int{}
		}
		m[ns][name] = len(m[ns]) + 1
	}
	return fmt.Sprint(len(m), m["a"]["y"], m["b"]["x"], m["c"]["z"])
}
