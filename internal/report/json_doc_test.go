package report

import (
	"reflect"
	"testing"

	"github.com/kvcheck/kvcheck/internal/advise"
	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/promql"
)

// TestDocumentsCoverDomainFields: the tap, assess, hitrate and metrics documents are report's
// own types, copied field by field from events', advise's, promql's and catalog's. A field added to a domain struct without its
// place in the document would be silently left out of the JSON; this names it instead.
func TestDocumentsCoverDomainFields(t *testing.T) {
	// Fields that were never in the JSON.
	skip := map[string]bool{
		"Analysis.HashPairsCompared": true,
		// The KV cache's size, which assess simulates with; hitrate does not show it.
		"Replica.NumGPUBlocks": true,
		// The requests behind the hit rate, which assess weighs it by; hitrate does not show it.
		"Replica.Requests": true,
	}
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
			// A domain struct the document writes as a value of its own (a catalog.Version as
			// its text) has no fields to match.
			if ft.Kind() == reflect.Struct && ft.PkgPath() == domain.PkgPath() && dt.Kind() == reflect.Struct {
				check(ft, dt)
			}
		}
	}
	check(reflect.TypeFor[events.Report](), reflect.TypeFor[tapReportDoc]())
	check(reflect.TypeFor[advise.Recommendation](), reflect.TypeFor[assessRecommendationDoc]())
	check(reflect.TypeFor[promql.Report](), reflect.TypeFor[hitrateDoc]())
	check(reflect.TypeFor[promql.Change](), reflect.TypeFor[hitrateChangeDoc]())
	check(reflect.TypeFor[catalog.Family](), reflect.TypeFor[metricsFamily]())
	check(reflect.TypeFor[catalog.Metric](), reflect.TypeFor[metricDocItem]())
	check(reflect.TypeFor[catalog.UnitChange](), reflect.TypeFor[unitChangeDoc]())
}
