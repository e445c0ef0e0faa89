package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The Gateway API Inference Extension's objects are no one router's: Envoy AI Gateway,
// kgateway, KServe and llm-d's gateway all delegate to an endpoint picker through an
// InferencePool (ROUTERS.md section 9).

// checkPool checks a GAIE InferencePool.
func (d *Doc) checkPool(root *yaml.Node) {
	for _, ref := range []string{"endpointPickerRef", "extensionRef"} {
		if m, _ := Str(root, "spec", ref, "failureMode"); m == "FailOpen" {
			d.Add("gaie/fail-open", Get(root, "spec", ref, "failureMode"), "spec."+ref+".failureMode",
				"failureMode FailOpen: while the endpoint picker is down the gateway sends requests to any endpoint, and prefix routing is bypassed without an error",
				"set spec."+ref+".failureMode: FailClose if a picker outage should fail requests instead")
		}
	}
}

// failOpenValues finds a failureMode: FailOpen for the pool in Helm values (inferencePool.failureMode).
func (d *Doc) failOpenValues(root *yaml.Node) {
	var walk func(n *yaml.Node, parent string, path string, depth int)
	walk = func(n *yaml.Node, parent, path string, depth int) {
		n = Deref(n)
		if n == nil || n.Kind != yaml.MappingNode || depth > 32 {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			v := Deref(n.Content[i+1])
			if k == "failureMode" && v.Kind == yaml.ScalarNode && v.Value == "FailOpen" &&
				(parent == "inferencePool" || parent == "endpointPickerRef" || parent == "extensionRef") {
				d.Add("gaie/fail-open", v, path+k,
					"failureMode FailOpen: while the endpoint picker is down the gateway sends requests to any endpoint, and prefix routing is bypassed without an error",
					"set "+path+"failureMode: FailClose if a picker outage should fail requests instead")
			}
			walk(v, k, path+k+".", depth+1)
		}
	}
	walk(root, "", "", 0)
}

// checkObjective checks a GAIE InferenceObjective's API group.
func (d *Doc) checkObjective(root *yaml.Node, api string) {
	if strings.HasPrefix(api, "inference.networking.x-k8s.io/") {
		d.Add("gaie/deprecated-objective-api", Get(root, "apiVersion"), "apiVersion",
			fmt.Sprintf("InferenceObjective in %s: the llm-d router logs this group as deprecated", api),
			"set apiVersion: llm-d.ai/v1alpha2")
	}
}
