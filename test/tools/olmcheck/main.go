// olmcheck: the OLM bundle of deploy/olm, with the Operator Framework's own library
// (docs/development.md, "The OLM bundle"):
//
//	olmcheck validate [-k8s-version 1.37] <bundle dir>
//	olmcheck generate -base FILE -version X.Y.Z -out DIR < rendered.yaml   (generate.go)
//	olmcheck objects -namespace NS <bundle dir>                             (objects.go)
//	olmcheck csv-crd                                                        (crd.go)
//
// validate runs the validators `operator-sdk bundle validate` runs: the default bundle
// validators (CSV, CRD, bundle) and the optional ones a catalog runs before publishing
// (OperatorHub v2 metadata, standard capabilities and categories, good practices, deprecated
// and removed APIs for -k8s-version, objects such as PDBs), and prints every error and warning,
// one a line. Exit status: 0 no errors (warnings allowed), 1 errors, 2 the bundle could not be
// loaded or bad arguments. Used by hack/olm-bundle.sh and test/e2e/olm_bundle_test.sh.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
	validator "github.com/operator-framework/api/pkg/validation/interfaces"
)

const usage = `usage: olmcheck validate [-k8s-version X.Y] <bundle dir>
       olmcheck generate -base FILE -version X.Y.Z -out DIR < rendered.yaml
       olmcheck objects -namespace NS <bundle dir>
       olmcheck csv-crd`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "validate":
		err = runValidate(os.Args[2:])
	case "generate":
		err = runGenerate(os.Args[2:])
	case "objects":
		err = runObjects(os.Args[2:])
	case "csv-crd":
		err = runCsvCrd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q\n%s", os.Args[1], usage)
	}
	if err == errFound {
		os.Exit(1)
	} else if err != nil {
		fmt.Fprintf(os.Stderr, "olmcheck: %v\n", err)
		os.Exit(2)
	}
}

// errFound: the validators found errors (exit status 1; they are printed already).
var errFound = fmt.Errorf("the bundle has errors")

func runValidate(args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	k8sVersion := fs.String("k8s-version", "1.37",
		"the Kubernetes version whose removed APIs are errors (deprecated ones are warnings)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%s", usage)
	}
	errs, warns, err := check(fs.Arg(0), *k8sVersion)
	if err != nil {
		return err
	}
	for _, w := range warns {
		fmt.Printf("WARN %s\n", w)
	}
	for _, e := range errs {
		fmt.Printf("ERROR %s\n", e)
	}
	fmt.Printf("olmcheck: %d errors, %d warnings\n", len(errs), len(warns))
	if len(errs) > 0 {
		return errFound
	}
	return nil
}

// check loads the bundle in dir and returns the validators' errors and warnings, each prefixed
// with the name of the manifest it is about, sorted so that runs compare.
func check(dir, k8sVersion string) (errs, warns []string, err error) {
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("loading the bundle %s: %w", dir, err)
	}
	validators := validator.Validators{}
	validators = append(validators, validation.DefaultBundleValidators...)
	validators = append(validators,
		validation.OperatorHubV2Validator,
		validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator,
		validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator,
		validation.ObjectValidator,
	)
	objects := append(bundle.ObjectsToValidate(), map[string]string{"k8s-version": k8sVersion})
	for _, result := range validators.Validate(objects...) {
		errs = append(errs, describe(result.Name, result.Errors)...)
		warns = append(warns, describe(result.Name, result.Warnings)...)
	}
	// Two validators may report the same finding (deprecated APIs: OperatorHub v2 and the
	// deprecated-APIs validator); once is enough.
	return unique(errs), unique(warns), nil
}

func describe(name string, found []errors.Error) []string {
	lines := make([]string, 0, len(found))
	for _, e := range found {
		lines = append(lines, fmt.Sprintf("%s: %s", name, e.Error()))
	}
	return lines
}

func unique(lines []string) []string {
	sort.Strings(lines)
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}
