package conformance

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type point struct {
	x, y int
	tag  string
}

// StructsCompare compares structs, arrays and pointers.
func StructsCompare() string {
	a := point{1, 2, "a"}
	b := point{1, 2, "a"}
	c := a
	c.tag = "c"
	pa, pb := &a, &b
	arr1 := [2]point{a, b}
	arr2 := [2]point{b, a}
	key := types.NamespacedName{Namespace: "n", Name: "x"}
	return fmt.Sprint(a == b, a == c, pa == pb, *pa == *pb, arr1 == arr2, key == types.NamespacedName{Namespace: "n", Name: "x"})
}

// StructsCopies copies on assignment and on a call; a pointer shares.
func StructsCopies() string {
	a := point{x: 1}
	b := a
	b.x = 2
	set := func(p point) { p.x = 9 }
	set(a)
	setp := func(p *point) { p.x = 7 }
	setp(&b)
	return fmt.Sprint(a.x, b.x)
}

// StructsAnonymousAndNested uses anonymous structs and nested literals.
func StructsAnonymousAndNested() string {
	cfg := struct {
		Name   string
		Limits struct{ CPU, Memory string }
	}{Name: "shop"}
	cfg.Limits.CPU = "100m"
	pairs := []struct {
		k string
		v int
	}{{"a", 1}, {"b", 2}}
	total := 0
	for _, p := range pairs {
		total += p.v
	}
	return fmt.Sprint(cfg.Name, cfg.Limits.CPU, cfg.Limits.Memory == "", total)
}

// StructsZeroValuesOfAPITypes reads zero values of API structs.
func StructsZeroValuesOfAPITypes() string {
	var cond metav1.Condition
	var t metav1.Time
	var p *metav1.Time
	return fmt.Sprint(cond.Status == "", cond.ObservedGeneration, t.IsZero(), p.IsZero(), cond.LastTransitionTime.IsZero())
}

// StructsPointerReceiversOnValues calls a pointer method on an addressable
// value, in a slice and a field.
func StructsPointerReceiversOnValues() string {
	type holder struct{ ps []point }
	h := holder{ps: []point{{}, {}}}
	h.ps[1].move(3)
	var q point
	q.move(1)
	return fmt.Sprint(h.ps[0].x, h.ps[1].x, q.x)
}

func (p *point) move(d int) { p.x += d }
