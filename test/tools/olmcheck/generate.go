package main

// generate: the OLM bundle from the objects deploy/ renders (docs/development.md, "The OLM
// bundle"), so the bundle's RBAC, Deployment and webhook are derived, never a hand-kept copy:
//
//	kubectl kustomize deploy/before-1.31/default |
//	  olmcheck generate -base deploy/olm/csv-base.yaml -version 0.1.0 -out deploy/olm
//
// writes, under -out:
//
//	bundle/manifests/   the ClusterServiceVersion (the base's descriptive fields, plus the
//	                    install strategy, permissions and webhook definition taken from the
//	                    rendered objects), every CRD (one file each; each must be in the
//	                    base's spec.customresourcedefinitions.owned, and every owned one
//	                    rendered), the metrics Service, the manager's PodDisruptionBudget
//	                    (an object kind OLM installs from a bundle, into the install namespace)
//	                    and the user-facing ClusterRoles (editor, viewer, metrics reader)
//	bundle/metadata/annotations.yaml
//	bundle.Containerfile   the bundle image's build file (the same annotations as labels)
//	other-namespaces.yaml  what a CSV cannot hold: Roles in namespaces other than the one
//	                       the operator is installed in (the node Leases' namespace, Events
//	                       in default), with their namespace and bindings
//
// Mapping (what OLM does with each part):
//   - ClusterRoles bound to the manager's ServiceAccount -> spec.install.spec.clusterPermissions;
//     Roles in the operator's namespace bound to it -> permissions (OLM makes the roles,
//     bindings and the ServiceAccount in the install namespace);
//   - the Deployment -> spec.install.spec.deployments, without the webhook certificate volume:
//     OLM mounts its own certificate at the same path (and at the path of --olm-cert-dir);
//   - the ValidatingWebhookConfiguration -> spec.webhookdefinitions; OLM makes the Service
//     (<deployment>-service) and the configuration, with its own CA. OLM's webhook definition
//     has no matchConditions field (operator-framework/api's WebhookDescription), so the
//     configuration's are dropped and under OLM every update of a NodeMaintenance's object goes
//     through the webhook (docs/operations.md, "Install with OLM");
//   - the webhook's Service and the ServiceAccount are left out (OLM makes them), and so are
//     the Namespaces.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const packageName = "node-maintenance-operator"

// bundleAnnotations are the bundle's metadata/annotations.yaml (and its image's labels).
var bundleAnnotations = [][2]string{
	{"operators.operatorframework.io.bundle.mediatype.v1", "registry+v1"},
	{"operators.operatorframework.io.bundle.manifests.v1", "manifests/"},
	{"operators.operatorframework.io.bundle.metadata.v1", "metadata/"},
	{"operators.operatorframework.io.bundle.package.v1", packageName},
	{"operators.operatorframework.io.bundle.channels.v1", "stable"},
	{"operators.operatorframework.io.bundle.channel.default.v1", "stable"},
}

func runGenerate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	base := fs.String("base", "", "the CSV's hand-written descriptive part (YAML)")
	version := fs.String("version", "", "the operator's version (semver, e.g. 0.1.0)")
	out := fs.String("out", "", "the folder to write bundle/, bundle.Containerfile and other-namespaces.yaml into")
	icon := fs.String("icon", "", "an SVG file for the CSV's icon (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" || *version == "" || *out == "" || fs.NArg() != 0 {
		return errors.New("usage: olmcheck generate -base FILE -version X.Y.Z -out DIR [-icon SVG] < rendered.yaml")
	}
	objects, err := readObjects(os.Stdin)
	if err != nil {
		return err
	}
	csvBase, err := os.ReadFile(*base)
	if err != nil {
		return err
	}
	b, err := buildBundle(objects, csvBase, *base, *version)
	if err != nil {
		return err
	}
	if *icon != "" {
		svg, err := os.ReadFile(*icon)
		if err != nil {
			return err
		}
		icons := []interface{}{map[string]interface{}{
			"base64data": base64.StdEncoding.EncodeToString(svg), "mediatype": "image/svg+xml"}}
		if err := set(b.csv, icons, "spec", "icon"); err != nil {
			return err
		}
	}
	return b.write(*out)
}

type bundle struct {
	csv       map[string]interface{}
	manifests map[string]*unstructured.Unstructured // file name -> object
	others    []*unstructured.Unstructured
}

func readObjects(r io.Reader) ([]*unstructured.Unstructured, error) {
	decoder := k8syaml.NewYAMLOrJSONDecoder(r, 4096)
	var objects []*unstructured.Unstructured
	for {
		var object map[string]interface{}
		if err := decoder.Decode(&object); err == io.EOF {
			return objects, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading the rendered objects: %w", err)
		}
		if len(object) > 0 {
			objects = append(objects, &unstructured.Unstructured{Object: object})
		}
	}
}

// all: the objects of the kind, in the rendered order.
func all(objects []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var found []*unstructured.Unstructured
	for _, o := range objects {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	return found
}

func only(objects []*unstructured.Unstructured, kind string) (*unstructured.Unstructured, error) {
	found := all(objects, kind)
	if len(found) != 1 {
		return nil, fmt.Errorf("the rendered objects hold %d %s, expected one", len(found), kind)
	}
	return found[0], nil
}

// boundToServiceAccount: the binding's only subject is the ServiceAccount ns/name.
func boundToServiceAccount(binding *unstructured.Unstructured, ns, name string) bool {
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	if len(subjects) != 1 {
		return false
	}
	s, _ := subjects[0].(map[string]interface{})
	return s["kind"] == "ServiceAccount" && s["name"] == name && s["namespace"] == ns
}

// buildBundle: baseName is the CSV base's file, for the errors about it.
func buildBundle(objects []*unstructured.Unstructured, csvBase []byte, baseName, version string) (*bundle, error) {
	deployment, err := only(objects, "Deployment")
	if err != nil {
		return nil, err
	}
	webhook, err := only(objects, "ValidatingWebhookConfiguration")
	if err != nil {
		return nil, err
	}
	crds := all(objects, "CustomResourceDefinition")
	if len(crds) == 0 {
		return nil, errors.New("the rendered objects hold no CustomResourceDefinition")
	}
	ns := deployment.GetNamespace()
	sa, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "serviceAccountName")
	if sa == "" {
		return nil, errors.New("the Deployment names no serviceAccountName")
	}
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objects {
		byName[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	b := &bundle{manifests: map[string]*unstructured.Unstructured{}}
	used := map[*unstructured.Unstructured]bool{deployment: true, webhook: true}
	for _, crd := range crds {
		used[crd] = true
	}
	// Every file of manifests/ once: two objects with one file name would lose one silently.
	addManifest := func(m *unstructured.Unstructured) error {
		name := manifestFile(m)
		if _, taken := b.manifests[name]; taken {
			return fmt.Errorf("two rendered objects make the bundle file %s", name)
		}
		b.manifests[name] = m
		return nil
	}

	// The manager's roles.
	var clusterRules, rules []interface{}
	for _, o := range objects {
		kind := o.GetKind()
		if (kind != "ClusterRoleBinding" && kind != "RoleBinding") || !boundToServiceAccount(o, ns, sa) {
			continue
		}
		roleKind, _, _ := unstructured.NestedString(o.Object, "roleRef", "kind")
		roleName, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		roleNS := ""
		if roleKind == "Role" {
			roleNS = o.GetNamespace()
		}
		role := byName[roleKind+"/"+roleNS+"/"+roleName]
		if role == nil {
			return nil, fmt.Errorf("%s %s binds %s %s, which is not among the rendered objects", kind, o.GetName(), roleKind, roleName)
		}
		roleRules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		switch {
		case kind == "ClusterRoleBinding" && roleKind == "ClusterRole":
			clusterRules = append(clusterRules, roleRules...)
		case kind == "RoleBinding" && o.GetNamespace() == ns:
			// A RoleBinding to a ClusterRole grants its rules in the namespace only, as a Role does.
			rules = append(rules, roleRules...)
		default: // a Role elsewhere: not expressible in a CSV
			b.others = append(b.others, role, o)
		}
		used[o], used[role] = true, true
	}

	// The webhook: its Service is OLM's to make.
	definitions, service, err := webhookDefinitions(webhook, deployment.GetName(), byName)
	if err != nil {
		return nil, err
	}
	used[service] = true

	for _, o := range objects {
		if used[o] {
			continue
		}
		switch o.GetKind() {
		case "ServiceAccount":
			if o.GetName() != sa || o.GetNamespace() != ns {
				return nil, fmt.Errorf("ServiceAccount %s/%s is not the manager's", o.GetNamespace(), o.GetName())
			}
		case "Namespace":
			if o.GetName() != ns {
				b.others = append([]*unstructured.Unstructured{o}, b.others...)
			}
		case "ClusterRole", "Service", "PodDisruptionBudget":
			m := o.DeepCopy()
			m.SetNamespace("")
			if err := addManifest(m); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("%s %s has no place in the bundle", o.GetKind(), o.GetName())
		}
	}
	// Every CRD, one file each (<name>_apiextensions.k8s.io_v1_customresourcedefinition.yaml).
	for _, crd := range crds {
		if err := addManifest(crd.DeepCopy()); err != nil {
			return nil, err
		}
	}
	for _, m := range b.manifests {
		managedByOLM(m.Object)
	}

	spec, err := deploymentSpec(deployment, definitions)
	if err != nil {
		return nil, err
	}
	csv := map[string]interface{}{}
	if err := yaml.Unmarshal(csvBase, &csv); err != nil {
		return nil, fmt.Errorf("the CSV base %s: %w", baseName, err)
	}
	if err := checkOwned(csv, crds); err != nil {
		return nil, fmt.Errorf("the CSV base %s, spec.customresourcedefinitions.owned: %w", baseName, err)
	}
	image, _, _ := unstructured.NestedSlice(spec, "template", "spec", "containers")
	if len(image) == 0 {
		return nil, errors.New("the Deployment has no containers")
	}
	containerImage, _ := image[0].(map[string]interface{})["image"].(string)
	deploymentLabels := deployment.GetLabels()
	labels := map[string]interface{}{}
	for k, v := range deploymentLabels {
		labels[k] = v
	}
	managedByOLM(map[string]interface{}{"metadata": map[string]interface{}{"labels": labels}})
	install := map[string]interface{}{
		"strategy": "deployment",
		"spec": map[string]interface{}{
			"deployments": []interface{}{map[string]interface{}{
				"name":  deployment.GetName(),
				"label": labels,
				"spec":  spec,
			}},
			"permissions": []interface{}{map[string]interface{}{
				"serviceAccountName": sa, "rules": rules,
			}},
			"clusterPermissions": []interface{}{map[string]interface{}{
				"serviceAccountName": sa, "rules": clusterRules,
			}},
		},
	}
	if err := set(csv, "node-maintenance-operator.v"+version, "metadata", "name"); err != nil {
		return nil, err
	}
	for path, value := range map[string]interface{}{
		"metadata.annotations.containerImage":                           containerImage,
		"metadata.annotations.operatorframework.io/suggested-namespace": ns,
		"spec.version":            version,
		"spec.install":            install,
		"spec.webhookdefinitions": definitions,
	} {
		keys := strings.SplitN(path, ".", 3)
		if err := set(csv, value, keys...); err != nil {
			return nil, err
		}
	}
	b.csv = csv
	return b, nil
}

// checkOwned: the CSV owns exactly the rendered CRDs (OLM installs only the CRDs a CSV owns, and
// refuses a bundle whose CSV owns one it does not carry), each once, with the CRD's kind and a
// version the CRD serves. Every problem is named, one a line.
func checkOwned(csv map[string]interface{}, crds []*unstructured.Unstructured) error {
	owned, _, err := unstructured.NestedSlice(csv, "spec", "customresourcedefinitions", "owned")
	if err != nil {
		return err
	}
	var problems []string
	entries := map[string]map[string]interface{}{}
	for i, o := range owned {
		entry, ok := o.(map[string]interface{})
		name, _ := entry["name"].(string)
		if !ok || name == "" {
			problems = append(problems, fmt.Sprintf("entry %d has no name", i))
			continue
		}
		if _, dup := entries[name]; dup {
			problems = append(problems, fmt.Sprintf("%s is listed twice", name))
		}
		entries[name] = entry
	}
	rendered := map[string]bool{}
	for _, crd := range crds {
		name := crd.GetName()
		rendered[name] = true
		entry, ok := entries[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("CustomResourceDefinition %s is rendered but not owned (add it to the owned list)", name))
			continue
		}
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		if entry["kind"] != kind {
			problems = append(problems, fmt.Sprintf("%s: kind %v, but the CRD's is %s", name, entry["kind"], kind))
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		var served []string
		for _, v := range versions {
			version, _ := v.(map[string]interface{})
			if version["served"] == true {
				served = append(served, fmt.Sprint(version["name"]))
			}
		}
		found := false
		for _, v := range served {
			found = found || v == entry["version"]
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: version %v, which the CRD does not serve (it serves %s)",
				name, entry["version"], strings.Join(served, ", ")))
		}
	}
	for name := range entries {
		if !rendered[name] {
			problems = append(problems, fmt.Sprintf("%s is owned but no such CustomResourceDefinition is rendered", name))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	if len(problems) == 1 {
		return errors.New(problems[0])
	}
	return fmt.Errorf("%d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
}

func set(object map[string]interface{}, value interface{}, keys ...string) error {
	return unstructured.SetNestedField(object, value, keys...)
}

// managedByOLM: under OLM, OLM manages the objects, not kustomize (the recommended label).
func managedByOLM(object map[string]interface{}) {
	metadata, _ := object["metadata"].(map[string]interface{})
	labels, _ := metadata["labels"].(map[string]interface{})
	if _, ok := labels["app.kubernetes.io/managed-by"]; ok {
		labels["app.kubernetes.io/managed-by"] = "olm"
	}
}

// manifestFile names a bundle file as operator-sdk does: <name>_<group>_<version>_<kind>.yaml.
func manifestFile(o *unstructured.Unstructured) string {
	gv := strings.ReplaceAll(o.GetAPIVersion(), "/", "_")
	if !strings.Contains(o.GetAPIVersion(), "/") {
		gv = "v1"
	}
	return strings.ToLower(fmt.Sprintf("%s_%s_%s.yaml", o.GetName(), gv, o.GetKind()))
}

// webhookDefinitions turns each webhook of the configuration into a CSV webhook definition
// and returns the Service the configuration calls (the same for all).
func webhookDefinitions(config *unstructured.Unstructured, deployment string,
	byName map[string]*unstructured.Unstructured) ([]interface{}, *unstructured.Unstructured, error) {
	webhooks, _, _ := unstructured.NestedSlice(config.Object, "webhooks")
	var definitions []interface{}
	var service *unstructured.Unstructured
	for _, w := range webhooks {
		hook := w.(map[string]interface{})
		ref, _, _ := unstructured.NestedMap(hook, "clientConfig", "service")
		if ref == nil {
			return nil, nil, fmt.Errorf("webhook %v calls no Service", hook["name"])
		}
		service = byName[fmt.Sprintf("Service/%v/%v", ref["namespace"], ref["name"])]
		if service == nil {
			return nil, nil, fmt.Errorf("webhook %v calls Service %v/%v, which is not rendered", hook["name"], ref["namespace"], ref["name"])
		}
		ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
		var port map[string]interface{}
		for _, p := range ports {
			if fmt.Sprint(p.(map[string]interface{})["port"]) == fmt.Sprint(ref["port"]) {
				port = p.(map[string]interface{})
			}
		}
		if port == nil {
			return nil, nil, fmt.Errorf("Service %v has no port %v", ref["name"], ref["port"])
		}
		definition := map[string]interface{}{
			"type":           "ValidatingAdmissionWebhook",
			"generateName":   hook["name"],
			"deploymentName": deployment,
			"containerPort":  port["port"],
			"targetPort":     port["targetPort"],
			"webhookPath":    ref["path"],
		}
		for _, field := range []string{"admissionReviewVersions", "sideEffects", "failurePolicy",
			"timeoutSeconds", "rules", "matchPolicy", "objectSelector"} {
			if v, ok := hook[field]; ok {
				definition[field] = v
			}
		}
		definitions = append(definitions, definition)
	}
	if len(definitions) == 0 {
		return nil, nil, errors.New("the ValidatingWebhookConfiguration has no webhooks")
	}
	return definitions, service, nil
}

// deploymentSpec: the Deployment's spec without the webhook's certificate volume (OLM mounts
// its own there).
func deploymentSpec(deployment *unstructured.Unstructured, definitions []interface{}) (map[string]interface{}, error) {
	spec, _, _ := unstructured.NestedMap(deployment.Object, "spec")
	podSpec, _, _ := unstructured.NestedMap(spec, "template", "spec")
	const certDir = "/tmp/k8s-webhook-server/serving-certs"
	dropped := map[string]bool{}
	containers, _, _ := unstructured.NestedSlice(podSpec, "containers")
	for i, c := range containers {
		container := c.(map[string]interface{})
		mounts, _, _ := unstructured.NestedSlice(container, "volumeMounts")
		var kept []interface{}
		for _, m := range mounts {
			if m.(map[string]interface{})["mountPath"] == certDir {
				dropped[m.(map[string]interface{})["name"].(string)] = true
				continue
			}
			kept = append(kept, m)
		}
		if len(kept) == 0 {
			delete(container, "volumeMounts")
		} else {
			container["volumeMounts"] = kept
		}
		containers[i] = container
	}
	if len(dropped) == 0 {
		return nil, fmt.Errorf("the Deployment mounts no webhook certificate at %s", certDir)
	}
	volumes, _, _ := unstructured.NestedSlice(podSpec, "volumes")
	var kept []interface{}
	for _, v := range volumes {
		if !dropped[v.(map[string]interface{})["name"].(string)] {
			kept = append(kept, v)
		}
	}
	if len(kept) == 0 {
		delete(podSpec, "volumes")
	} else {
		podSpec["volumes"] = kept
	}
	podSpec["containers"] = containers
	if template, ok := spec["template"].(map[string]interface{}); ok {
		managedByOLM(template)
	}
	if err := unstructured.SetNestedMap(spec, podSpec, "template", "spec"); err != nil {
		return nil, err
	}
	return spec, nil
}

func (b *bundle) write(out string) error {
	manifests := filepath.Join(out, "bundle", "manifests")
	metadata := filepath.Join(out, "bundle", "metadata")
	// Stale files from an earlier generation (a renamed object) must not stay behind.
	if err := os.RemoveAll(filepath.Join(out, "bundle")); err != nil {
		return err
	}
	for _, dir := range []string{manifests, metadata} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	header := "# Generated by hack/olm-bundle.sh from deploy/ and deploy/olm/csv-base.yaml: do not edit.\n"
	files := map[string]interface{}{
		filepath.Join(manifests, packageName+".clusterserviceversion.yaml"): b.csv,
	}
	for name, m := range b.manifests {
		files[filepath.Join(manifests, name)] = m.Object
	}
	annotations := map[string]interface{}{}
	var labels bytes.Buffer
	labels.WriteString(header)
	labels.WriteString("# The bundle image: podman build -f deploy/olm/bundle.Containerfile deploy/olm/bundle\nFROM scratch\n")
	for _, a := range bundleAnnotations {
		annotations[a[0]] = a[1]
		fmt.Fprintf(&labels, "LABEL %s=%s\n", a[0], a[1])
	}
	labels.WriteString("COPY manifests /manifests/\nCOPY metadata /metadata/\n")
	files[filepath.Join(metadata, "annotations.yaml")] = map[string]interface{}{"annotations": annotations}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data, err := yaml.Marshal(files[name])
		if err != nil {
			return err
		}
		if err := os.WriteFile(name, append([]byte(header), data...), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(out, "bundle.Containerfile"), labels.Bytes(), 0o644); err != nil {
		return err
	}
	var others bytes.Buffer
	others.WriteString(header)
	others.WriteString("# What a ClusterServiceVersion cannot hold: the operator's Roles in namespaces other than the one\n" +
		"# OLM installs it in. Apply after the operator is installed (docs/operations.md, \"Install with OLM\").\n")
	for _, o := range b.others {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		others.WriteString("---\n")
		others.Write(data)
	}
	return os.WriteFile(filepath.Join(out, "other-namespaces.yaml"), others.Bytes(), 0o644)
}
