package report

import (
	"reflect"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/events"
)

// TestDocumentsCoverDomainFields: the tap and assess documents are report's own types, copied
// field by field from events' and advise's. A field added to a domain struct without its
// place in the document would be silently left out of the JSON; this names it instead.
func TestDocumentsCoverDomainFields(t *testing.T) {
	// Fields that were never in the JSON.
	skip := map[string]bool{"Analysis.HashPairsCompared": true}
	var check func(domain, doc reflect.Type)
	check = func(domain, doc reflect.Type) {
		for i := range domain.NumField() {
			f := domain.Field(i)
			if !f.IsExported() || skip[domain.Name()+"."+f.Name] {
				continue
			}
			df, ok := doc.FieldByName(f.Name)
			if !ok {
				t.Errorf("%s.%s has no field in %s: add it to the JSON document (or to skip, with a reason)", domain.Name(), f.Name, doc.Name())
				continue
			}
			if df.Tag.Get("json") == "" {
				t.Errorf("%s.%s has no json tag", doc.Name(), df.Name)
			}
			ft, dt := f.Type, df.Type
			for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
				ft, dt = ft.Elem(), dt.Elem()
			}
			if ft.Kind() == reflect.Struct && ft.PkgPath() == domain.PkgPath() {
				check(ft, dt)
			}
		}
	}
	check(reflect.TypeFor[events.Report](), reflect.TypeFor[tapReportDoc]())
	check(reflect.TypeFor[advise.Recommendation](), reflect.TypeFor[assessRecommendationDoc]())
}
