package conformance

import (
	"fmt"
	"strings"

	dbv1 "github.com/oplab-dev/oplab/controller/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type gauge struct{ n int }

func (g gauge) value() int { return g.n }

func (g *gauge) add(d int) { g.n += d }

func (g gauge) String() string { return fmt.Sprintf("gauge(%d)", g.n) }

// MethodsValueBindsACopy takes a method value of a value receiver: it keeps
// the receiver as it was.
func MethodsValueBindsACopy() string {
	g := gauge{1}
	v := g.value
	g.n = 2
	p := &g
	pv := p.value
	g.n = 3
	return fmt.Sprint(v(), pv(), g.value())
}

// MethodsValueOfPointerReceiver takes a method value of a pointer
// receiver, through an addressable value.
func MethodsValueOfPointerReceiver() string {
	g := gauge{}
	add := g.add
	add(2)
	add(3)
	fs := []func(int){g.add, (&g).add}
	for _, f := range fs {
		f(10)
	}
	return fmt.Sprint(g.n)
}

// MethodsExpressions calls methods as functions.
func MethodsExpressions() string {
	value := gauge.value
	add := (*gauge).add
	g := gauge{4}
	add(&g, 1)
	str := gauge.String
	return fmt.Sprint(value(g), " ", str(g))
}

// MethodsStringerThroughFmt formats a type of the code's own that has a
// String method.
func MethodsStringerThroughFmt() string {
	g := gauge{7}
	var s fmt.Stringer = g
	return fmt.Sprint(g, " ", &g, " ", s.String(), " ", fmt.Sprintf("%v|%s", g, g))
}

// MethodsOfAPITypes calls methods of the API's types and takes their
// method values.
func MethodsOfAPITypes() string {
	db := &dbv1.Database{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "ns"}}
	getName := db.GetName
	db.SetName("cart")
	labels := db.GetLabels()
	db.SetLabels(map[string]string{"a": "b"})
	return fmt.Sprint(getName(), " ", labels == nil, " ", db.GetLabels()["a"], " ", strings.ToUpper(db.GetNamespace()))
}

type shape interface {
	area() int
	name() string
}

type rect struct{ w, h int }

func (r rect) area() int { return r.w * r.h }

func (r rect) name() string { return "rect" }

type square struct{ rect }

func (square) name() string { return "square" }

// MethodsThroughInterfaces calls methods through an interface, some of
// them promoted from an embedded struct.
func MethodsThroughInterfaces() string {
	shapes := []shape{rect{2, 3}, square{rect{4, 4}}, &square{rect{1, 1}}}
	var out []string
	for _, s := range shapes {
		out = append(out, fmt.Sprint(s.name(), s.area()))
	}
	return strings.Join(out, ",")
}
