package main

// crd: OLM's own ClusterServiceVersion CustomResourceDefinition, as the Operator Framework's
// API module ships it, in JSON on stdout:
//
//	olmcheck csv-crd
//
// so that a cluster without OLM can judge the bundle's ClusterServiceVersion itself (a
// server-side dry run against OLM's schema) without installing OLM.

import (
	"encoding/json"
	"errors"
	"os"

	"github.com/operator-framework/api/crds"
)

func runCsvCrd(args []string) error {
	if len(args) != 0 {
		return errors.New("usage: olmcheck csv-crd")
	}
	crd := crds.ClusterServiceVersion()
	crd.APIVersion = "apiextensions.k8s.io/v1"
	crd.Kind = "CustomResourceDefinition"
	// Without a status: the API server makes its own, and an empty one has null conditions,
	// which `kubectl wait --for=condition=Established` cannot read.
	encoded, err := json.Marshal(crd)
	if err != nil {
		return err
	}
	var object map[string]any
	if err := json.Unmarshal(encoded, &object); err != nil {
		return err
	}
	delete(object, "status")
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(object)
}
