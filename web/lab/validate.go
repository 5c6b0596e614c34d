package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

// MaxNameLength is the longest Database name the lab accepts. DNS labels may
// have 63 characters, but the controller derives child names (Pods get
// "-N", the Secret "-credentials", the snapshot "-final-snapshot"), and
// those must still fit.
const MaxNameLength = 40

// FieldError is bad input, naming the form field it came from.
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// CreateInput is a validated "create a Database" form.
type CreateInput struct {
	Name     string
	Engine   string
	Version  string
	Replicas int32
	Pitfall  string
}

// EditInput is a validated "edit the spec" form: only the fields the learner
// changed are set, so applying it never undoes a change made meanwhile by
// someone else (kubectl, another tab) to the fields left alone.
type EditInput struct {
	Replicas *int32
	// Version, when set, is the new version; "" means the engine's default.
	Version *string
}

// Empty reports whether the form changed nothing.
func (in EditInput) Empty() bool { return in.Replicas == nil && in.Version == nil }

// The edit form's hidden fields: the values the form showed, so the handler
// can tell what the learner changed.
const (
	origReplicasField = "origReplicas"
	origVersionField  = "origVersion"
)

// ChildKind is a kind of child the lab lets a learner delete by hand.
type ChildKind string

// The children a learner may delete to cause drift.
const (
	ChildStatefulSet ChildKind = "statefulset"
	ChildService     ChildKind = "service"
	ChildSecret      ChildKind = "secret"
)

// ChildKinds lists the ChildKind values, in display order.
var ChildKinds = []ChildKind{ChildStatefulSet, ChildService, ChildSecret}

// The rules for spec.engine and spec.version are read from the Database
// CRD, which controller-gen writes from the API package's markers, so the lab
// checks exactly what the API server will: a changed marker changes both.
var (
	// Engines lists the engines the CRD accepts, in its order.
	Engines []string
	// versionPattern and maxVersionLength are the CRD's rules for spec.version.
	versionPattern   *regexp.Regexp
	maxVersionLength int
)

func init() {
	spec, err := specSchema()
	if err != nil {
		// The CRD is embedded in the binary: a broken one is a build defect,
		// which the package's tests catch, like a bad regexp.MustCompile.
		panic(fmt.Sprintf("lab: reading the Database CRD: %v", err))
	}
	Engines, versionPattern, maxVersionLength, err = specRules(spec)
	if err != nil {
		panic(fmt.Sprintf("lab: reading the Database CRD: %v", err))
	}
}

// specSchema returns the OpenAPI schema of the served Database version's spec.
func specSchema() (apiextensionsv1.JSONSchemaProps, error) {
	crds, err := controller.CRDs()
	if err != nil {
		return apiextensionsv1.JSONSchemaProps{}, err
	}
	for _, crd := range crds {
		if crd.Spec.Group != v1alpha1.GroupVersion.Group || crd.Spec.Names.Kind != "Database" {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Name == v1alpha1.GroupVersion.Version && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				return v.Schema.OpenAPIV3Schema.Properties["spec"], nil
			}
		}
	}
	return apiextensionsv1.JSONSchemaProps{}, fmt.Errorf("no schema for Database %s", v1alpha1.GroupVersion)
}

// specRules reads the engines and the version rules from the spec's schema.
func specRules(spec apiextensionsv1.JSONSchemaProps) ([]string, *regexp.Regexp, int, error) {
	var engines []string
	for _, raw := range spec.Properties["engine"].Enum {
		var e string
		if err := json.Unmarshal(raw.Raw, &e); err != nil {
			return nil, nil, 0, fmt.Errorf("spec.engine enum value %s: %w", raw.Raw, err)
		}
		engines = append(engines, e)
	}
	if len(engines) == 0 {
		return nil, nil, 0, errors.New("spec.engine has no enum")
	}
	version := spec.Properties["version"]
	if version.Pattern == "" || version.MaxLength == nil {
		return nil, nil, 0, errors.New("spec.version has no pattern or maxLength")
	}
	re, err := regexp.Compile(version.Pattern)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("spec.version pattern: %w", err)
	}
	return engines, re, int(*version.MaxLength), nil
}

// validName checks a Database name: a DNS-1123 label of at most
// MaxNameLength characters.
func validName(field, name string) error {
	if name == "" {
		return fieldErr(field, "required: give the Database a name such as orders")
	}
	if len(name) > MaxNameLength {
		return fieldErr(field, "%q is %d characters long; the lab allows at most %d", name, len(name), MaxNameLength)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fieldErr(field, "%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// parseReplicas reads a whole number in [lo, hi]. The bounds here only catch
// nonsense; the Database's own limits are left to the API server on purpose,
// so that a learner who types 7 sees the CRD's schema reject it.
func parseReplicas(field, s string, lo, hi int) (int32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fieldErr(field, "required: give a whole number")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fieldErr(field, "%q is not a whole number", s)
	}
	if n < lo || n > hi {
		return 0, fieldErr(field, "%d is out of range: want %d to %d", n, lo, hi)
	}
	return int32(n), nil
}

// validVersion checks an engine version; empty means the engine's default.
func validVersion(field, v string) error {
	if v == "" {
		return nil
	}
	if len(v) > maxVersionLength {
		return fieldErr(field, "%q is longer than %d characters", v, maxVersionLength)
	}
	if !versionPattern.MatchString(v) {
		return fieldErr(field, "%q is not a version: use letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. 17 or 8.4)", v)
	}
	return nil
}

// validPitfall checks a pitfall name against the known list; empty means none.
func validPitfall(field, name string, known []controller.PitfallInfo) error {
	if name == "" {
		return nil
	}
	names := make([]string, 0, len(known))
	for _, p := range known {
		if p.Name == name {
			return nil
		}
		names = append(names, p.Name)
	}
	return fieldErr(field, "unknown pitfall %q: want one of %s, or none", name, strings.Join(names, ", "))
}

func parseCreate(form url.Values, known []controller.PitfallInfo) (CreateInput, error) {
	in := CreateInput{
		Name:    strings.TrimSpace(form.Get("name")),
		Engine:  strings.TrimSpace(form.Get("engine")),
		Version: strings.TrimSpace(form.Get("version")),
		Pitfall: strings.TrimSpace(form.Get("pitfall")),
	}
	if err := validName("name", in.Name); err != nil {
		return in, err
	}
	if in.Engine == "" {
		in.Engine = "postgres"
	}
	if !slices.Contains(Engines, in.Engine) {
		return in, fieldErr("engine", "%q is not an engine: want %s", in.Engine, strings.Join(Engines, " or "))
	}
	if err := validVersion("version", in.Version); err != nil {
		return in, err
	}
	n, err := parseReplicas("replicas", form.Get("replicas"), 1, 99)
	if err != nil {
		return in, err
	}
	in.Replicas = n
	return in, validPitfall("pitfall", in.Pitfall, known)
}

// parseEdit reads the edit form. A field is set when its value differs from
// the one the form showed (its orig* hidden field); a form without the
// hidden fields sets both, as it cannot say what changed.
func parseEdit(form url.Values) (EditInput, error) {
	var in EditInput
	n, err := parseReplicas("replicas", form.Get("replicas"), 1, 99)
	if err != nil {
		return in, err
	}
	v := strings.TrimSpace(form.Get("version"))
	if err := validVersion("version", v); err != nil {
		return in, err
	}
	if orig, ok := form[origReplicasField]; !ok || strings.TrimSpace(orig[0]) != strconv.Itoa(int(n)) {
		in.Replicas = &n
	}
	if orig, ok := form[origVersionField]; !ok || strings.TrimSpace(orig[0]) != v {
		in.Version = &v
	}
	return in, nil
}

func parseChildKind(s string) (ChildKind, error) {
	k := ChildKind(strings.ToLower(s))
	if !slices.Contains(ChildKinds, k) {
		return "", fieldErr("kind", "%q is not a child the lab can delete: want statefulset, service or secret", s)
	}
	return k, nil
}
