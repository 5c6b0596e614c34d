package conformance

import (
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "nil"
	case int, int64:
		return fmt.Sprint("integer ", x)
	case string:
		return "string " + strings.ToUpper(x)
	case error:
		return "error " + x.Error()
	case *corev1.Secret:
		return "secret " + x.Name
	case client.Object:
		return "object " + x.GetName()
	case fmt.Stringer:
		return "stringer " + x.String()
	default:
		return fmt.Sprintf("other %T", x)
	}
}

// SwitchesTypeSwitch picks cases by dynamic type, several types to a
// case, nil, interfaces and API objects.
func SwitchesTypeSwitch() string {
	var out []string
	for _, v := range []any{nil, 1, int64(2), "s", errors.New("e"), time.Second, &corev1.Secret{}, &appsv1.StatefulSet{}, 1.5} {
		out = append(out, kindOf(v))
	}
	return strings.Join(out, ",")
}

// SwitchesFallthrough runs into the next case.
func SwitchesFallthrough() string {
	var out []string
	for i := 0; i < 4; i++ {
		switch i {
		case 0:
			out = append(out, "zero")
			fallthrough
		case 1:
			out = append(out, "zero-or-one")
		case 2, 3:
			if i == 3 {
				out = append(out, "three")
				break
			}
			out = append(out, "two")
		}
	}
	return strings.Join(out, ",")
}

// SwitchesNoCondition is an if-else chain, with an init statement.
func SwitchesNoCondition() string {
	grade := func(ready, want int32) string {
		switch diff := want - ready; {
		case ready == 0:
			return "down"
		case diff > 0:
			return fmt.Sprint("scaling ", diff)
		case diff < 0:
			return "shrinking"
		default:
			return "ready"
		}
	}
	return grade(0, 3) + "," + grade(1, 3) + "," + grade(4, 3) + "," + grade(3, 3)
}

// SwitchesOnStrings switches on a string with a default in the middle.
func SwitchesOnStrings() string {
	phase := func(s corev1.PodPhase) int {
		switch s {
		case corev1.PodRunning:
			return 1
		default:
			return -1
		case corev1.PodPending, corev1.PodUnknown:
			return 0
		}
	}
	return fmt.Sprint(phase(corev1.PodRunning), phase(corev1.PodPending), phase(corev1.PodFailed))
}

// SwitchesTypeSwitchOnError matches the API's error type, with an init
// statement.
func SwitchesTypeSwitchOnError() string {
	describe := func(fail int) string {
		switch err := get(fail); e := err.(type) {
		case *apierrors.StatusError:
			return fmt.Sprint("status ", e.ErrStatus.Reason, " ", err != nil)
		case nil:
			return "none"
		default:
			return "other " + e.Error()
		}
	}
	return describe(1) + "," + describe(0) + "," + describe(2)
}

func get(fail int) error {
	switch fail {
	case 1:
		return apierrors.NewNotFound(corev1.Resource("secrets"), "shop")
	case 2:
		return errors.New("x")
	}
	return nil
}

// SwitchesInitAndTag switches on a value with an init statement, and
// breaks out of a case.
func SwitchesInitAndTag() string {
	var out []string
	for _, s := range []string{"a", "bb", "ccc"} {
		switch n := len(s); n {
		case 1:
			out = append(out, "one")
		case 2:
			if s == "bb" {
				out = append(out, "two")
				break
			}
			out = append(out, "never")
		default:
			out = append(out, fmt.Sprint(n))
		}
	}
	return strings.Join(out, ",")
}

// SwitchesTypeSwitchOwnTypes matches interfaces and types of the code's
// own held in an interface.
func SwitchesTypeSwitchOwnTypes() string {
	var out []string
	for _, v := range []any{label{"x"}, &box{3}, box{4}, []label{{"y"}}} {
		switch x := v.(type) {
		case *box:
			out = append(out, fmt.Sprint("*box ", x.n))
		case box:
			out = append(out, fmt.Sprint("box ", x.n))
		case label:
			out = append(out, "label "+x.s)
		default:
			out = append(out, fmt.Sprintf("other %d", len(x.([]label))))
		}
	}
	return strings.Join(out, ",")
}

type label struct{ s string }

type box struct{ n int }
