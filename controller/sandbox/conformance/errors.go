package conformance

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

var errNotReady = errors.New("not ready")

// ErrorsWrapIs wraps a sentinel twice and finds it.
func ErrorsWrapIs() string {
	err := fmt.Errorf("reconcile shop: %w", fmt.Errorf("statefulset: %w", errNotReady))
	other := fmt.Errorf("reconcile shop: %v", errNotReady)
	return fmt.Sprint(err, " ", errors.Is(err, errNotReady), " ", errors.Is(other, errNotReady), " ", errors.Unwrap(errors.Unwrap(err)) == errNotReady)
}

// ErrorsAsStatusError finds the API's error type in a chain, as a
// reconciler reads an API error's details.
func ErrorsAsStatusError() string {
	nf := apierrors.NewNotFound(corev1.Resource("secrets"), "shop")
	var err error = fmt.Errorf("get secret: %w", nf)
	var se *apierrors.StatusError
	ok := errors.As(err, &se)
	code := int32(0)
	if ok {
		code = se.ErrStatus.Code
	}
	var other *apierrors.StatusError
	return fmt.Sprint(ok, " ", code, " ", se == nf, " ", errors.As(errors.New("x"), &other), other == nil)
}

// ErrorsJoin joins errors and finds each.
func ErrorsJoin() string {
	a, b := errors.New("a"), errors.New("b")
	j := errors.Join(a, nil, b)
	return fmt.Sprintf("%q %v %v %v", j.Error(), errors.Is(j, a), errors.Is(j, b), errors.Join(nil, nil) == nil)
}

// ErrorsAPIPredicates asks apierrors about wrapped API errors.
func ErrorsAPIPredicates() string {
	gr := corev1.Resource("secrets")
	nf := apierrors.NewNotFound(gr, "shop")
	wrapped := fmt.Errorf("get: %w", nf)
	conflict := apierrors.NewConflict(gr, "shop", errors.New("changed"))
	exists := apierrors.NewAlreadyExists(gr, "shop")
	return fmt.Sprint(apierrors.IsNotFound(wrapped), apierrors.IsConflict(conflict), apierrors.IsAlreadyExists(exists),
		apierrors.IsNotFound(conflict), " ", apierrors.ReasonForError(wrapped), " ", nf.Error())
}

// ErrorsTypedNil returns a nil pointer of the API's error type as an
// error: the interface holds a nil pointer and is not nil.
func ErrorsTypedNil() string {
	f := func(fail bool) error {
		var se *apierrors.StatusError
		if fail {
			se = apierrors.NewBadRequest("no")
		}
		return se
	}
	g := func(fail bool) error {
		if fail {
			return apierrors.NewBadRequest("no")
		}
		return nil
	}
	return fmt.Sprint(f(false) != nil, g(false) != nil, f(true) != nil)
}

// ErrorsNamedResultWrap wraps the error a function is about to return in
// a deferred function, as a reconciler adds context once.
func ErrorsNamedResultWrap() string {
	step := func(fail bool) (err error) {
		defer func() {
			if err != nil {
				err = fmt.Errorf("reconcile shop: %w", err)
			}
		}()
		if fail {
			return apierrors.NewConflict(corev1.Resource("configmaps"), "shop", errors.New("changed"))
		}
		return nil
	}
	err := step(true)
	return fmt.Sprint(step(false), " ", apierrors.IsConflict(err), " ", err)
}
