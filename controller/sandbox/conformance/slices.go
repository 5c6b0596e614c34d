package conformance

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type replica struct {
	name  string
	ready bool
}

// SlicesRangeValueCopies changes the loop's copy, which leaves the slice
// as it was, then changes the slice by index.
func SlicesRangeValueCopies() string {
	rs := []replica{{"a", false}, {"b", false}}
	for _, r := range rs {
		r.ready = true
	}
	before := rs[0].ready || rs[1].ready
	for i := range rs {
		rs[i].ready = true
	}
	return fmt.Sprint(before, rs[0].ready && rs[1].ready)
}

// SlicesPointerIntoElement holds a pointer to an element.
func SlicesPointerIntoElement() string {
	conds := []metav1.Condition{{Type: "Ready"}, {Type: "Degraded"}}
	var ready *metav1.Condition
	for i := range conds {
		if conds[i].Type == "Ready" {
			ready = &conds[i]
		}
	}
	ready.Status = metav1.ConditionTrue
	return fmt.Sprint(conds[0].Status)
}

// SlicesAppendAliasing shows two slices sharing a backing array until one
// outgrows it.
func SlicesAppendAliasing() string {
	base := make([]int, 3, 4)
	a := append(base, 1)
	b := append(base, 2)
	c := append(base[:3:3], 3)
	c[0] = 9
	return fmt.Sprint(a[3], b[3], base[0], c)
}

// SlicesCopyAndDelete removes an element in place.
func SlicesCopyAndDelete() string {
	s := []string{"a", "b", "c", "d"}
	i := 1
	n := copy(s[i:], s[i+1:])
	s = s[:len(s)-1]
	var nilSlice []string
	empty := []string{}
	return fmt.Sprint(n, s, nilSlice == nil, empty == nil, len(nilSlice))
}

// SlicesSortStructs sorts structs by a field, swapping whole elements.
func SlicesSortStructs() string {
	rs := []replica{{"c", true}, {"a", false}, {"b", true}}
	less := func(i, j int) bool { return rs[i].name < rs[j].name }
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && less(j, j-1); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
	var names []string
	for _, r := range rs {
		names = append(names, r.name)
	}
	return strings.Join(names, "")
}

// SlicesOfSlices grows a two-dimensional slice.
func SlicesOfSlices() string {
	grid := make([][]int, 3)
	for i := range grid {
		grid[i] = make([]int, i+1)
		for j := range grid[i] {
			grid[i][j] = i * j
		}
	}
	return fmt.Sprint(grid)
}

// SlicesArraysAreValues copies an array on assignment.
func SlicesArraysAreValues() string {
	a := [3]int{1, 2, 3}
	b := a
	b[0] = 9
	p := &a
	p[1] = 8
	return fmt.Sprint(a, b, len(a))
}
