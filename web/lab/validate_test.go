package lab

import (
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/oplab-dev/oplab/controller/api/v1alpha1"
)

func TestRulesComeFromTheCRD(t *testing.T) {
	want := []string{string(v1alpha1.EnginePostgres), string(v1alpha1.EngineMySQL)}
	if !slices.Equal(Engines, want) {
		t.Errorf("Engines = %q, want the API's %q", Engines, want)
	}
	if maxVersionLength != 32 {
		t.Errorf("maxVersionLength = %d, want the CRD's 32", maxVersionLength)
	}
	for v, ok := range map[string]bool{"17": true, "8.4": true, "16.4-alpine": true, "-17": false, "17; rm": false, ".1": false} {
		if got := versionPattern.MatchString(v); got != ok {
			t.Errorf("versionPattern.MatchString(%q) = %v, want %v", v, got, ok)
		}
	}
}

func TestSpecRulesNameWhatIsMissing(t *testing.T) {
	tests := []struct {
		name string
		spec apiextensionsv1.JSONSchemaProps
		want string
	}{
		{"no enum", apiextensionsv1.JSONSchemaProps{}, "spec.engine has no enum"},
		{"no pattern", apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"engine": {Enum: []apiextensionsv1.JSON{{Raw: []byte(`"postgres"`)}}},
		}}, "spec.version has no pattern"},
		{"bad enum", apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"engine": {Enum: []apiextensionsv1.JSON{{Raw: []byte(`7`)}}},
		}}, "spec.engine enum value 7"},
	}
	for _, tt := range tests {
		if _, _, _, err := specRules(tt.spec); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.want)
		}
	}
}
