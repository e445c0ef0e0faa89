package rank

import (
	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/router/ray"
	"github.com/kvcheck/kvcheck/internal/router/sglang"
)

// The names the ranking's tests use for the products' shared vocabulary.
type (
	Traffic     = product.Traffic
	Files       = product.Files
	Engine      = product.Engine
	Requirement = product.Requirement
	Change      = product.Change
)

const (
	Met            = product.Met
	Missing        = product.Missing
	Unknown        = product.Unknown
	ReqKVEvents    = product.ReqKVEvents
	ReqKubernetes  = product.ReqKubernetes
	ReqVLLMVersion = product.ReqVLLMVersion
	ReqLMCache     = product.ReqLMCache
)

// productOf is the id of the product an emulation belongs to.
func productOf(policy string) string {
	p, _ := router.Of(policy)
	return p.Name().ID
}

// shippedOf is the settings an emulation's product ships with (its first default set).
func shippedOf(policy string) product.Settings {
	p, _ := router.Of(policy)
	return p.Shipped()[0].Settings
}

// configured is what the ranking reads of one router a file sets up: its product's Configure.
func configured(r lint.RouterFacts, _ string) []product.Configured {
	p, _ := router.Lookup(r.Kind)
	return p.Configure(product.Facts{Product: r.Kind, File: r.File, Line: r.Line, Values: r.Values})
}

// The products' ids and requirements, by their former names in this package.
const (
	ProdStack = prodstack.ID
	LLMD      = llmd.ID
	Dynamo    = dynamo.ID
	SGLang    = sglang.ID
	Ray       = ray.ID
	LiteLLM   = litellm.ID
	ReqDynamo = dynamo.ReqFrontend
)
