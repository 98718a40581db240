package main

// objects: the Kubernetes objects OLM would create from the bundle when installing it into a
// namespace, as one JSON List on stdout, for `kubectl apply --dry-run=server -f -`:
//
//	olmcheck objects -namespace NS <bundle dir>
//
// the CRDs; the ServiceAccount, a Role and RoleBinding per `permissions` entry and a ClusterRole
// and ClusterRoleBinding per `clusterPermissions` entry; each Deployment of the install
// strategy; per webhook definition the Service OLM puts in front of the deployment and the
// ValidatingWebhookConfiguration (built with the library's own GetValidatingWebhook, as OLM
// does); and the bundle's other manifests, in NS. Not the ClusterServiceVersion itself (its
// kind exists only where OLM is installed) and not OLM's certificate Secret.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func runObjects(args []string) error {
	fs := flag.NewFlagSet("objects", flag.ContinueOnError)
	namespace := fs.String("namespace", "", "the namespace OLM installs the operator into")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *namespace == "" || fs.NArg() != 1 {
		return errors.New("usage: olmcheck objects -namespace NS <bundle dir>")
	}
	bundle, err := manifests.GetBundleFromDir(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("loading the bundle %s: %w", fs.Arg(0), err)
	}
	items, err := installObjects(bundle, *namespace)
	if err != nil {
		return err
	}
	list := map[string]interface{}{"apiVersion": "v1", "kind": "List", "items": items}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	return encoder.Encode(list)
}

func typed(apiVersion, kind string, object interface{}) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(object)
	if err != nil {
		return nil, err
	}
	m["apiVersion"], m["kind"] = apiVersion, kind
	if metadata, ok := m["metadata"].(map[string]interface{}); ok {
		delete(metadata, "creationTimestamp")
	}
	delete(m, "status")
	return m, nil
}

func installObjects(bundle *manifests.Bundle, ns string) ([]interface{}, error) {
	csv := bundle.CSV
	var items []interface{}
	add := func(apiVersion, kind string, object interface{}) error {
		m, err := typed(apiVersion, kind, object)
		if err == nil {
			items = append(items, m)
		}
		return err
	}
	for _, crd := range bundle.V1CRDs {
		if err := add("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd); err != nil {
			return nil, err
		}
	}
	var install v1alpha1.StrategyDetailsDeployment
	install = csv.Spec.InstallStrategy.StrategySpec
	accounts := map[string]bool{}
	meta := func(name string, namespaced bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: name}
		if namespaced {
			m.Namespace = ns
		}
		return m
	}
	subject := func(sa string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}
	}
	for i, p := range install.Permissions {
		accounts[p.ServiceAccountName] = true
		name := fmt.Sprintf("%s-permissions-%d", csv.GetName(), i)
		if err := add("rbac.authorization.k8s.io/v1", "Role", &rbacv1.Role{ObjectMeta: meta(name, true), Rules: p.Rules}); err != nil {
			return nil, err
		}
		if err := add("rbac.authorization.k8s.io/v1", "RoleBinding", &rbacv1.RoleBinding{ObjectMeta: meta(name, true),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
			Subjects: subject(p.ServiceAccountName)}); err != nil {
			return nil, err
		}
	}
	for i, p := range install.ClusterPermissions {
		accounts[p.ServiceAccountName] = true
		name := fmt.Sprintf("%s-cluster-permissions-%d", csv.GetName(), i)
		if err := add("rbac.authorization.k8s.io/v1", "ClusterRole", &rbacv1.ClusterRole{ObjectMeta: meta(name, false), Rules: p.Rules}); err != nil {
			return nil, err
		}
		if err := add("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &rbacv1.ClusterRoleBinding{ObjectMeta: meta(name, false),
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
			Subjects: subject(p.ServiceAccountName)}); err != nil {
			return nil, err
		}
	}
	for sa := range accounts {
		if err := add("v1", "ServiceAccount", &corev1.ServiceAccount{ObjectMeta: meta(sa, true)}); err != nil {
			return nil, err
		}
	}
	deployments := map[string]appsv1.DeploymentSpec{}
	for _, d := range install.DeploymentSpecs {
		deployments[d.Name] = d.Spec
		m := meta(d.Name, true)
		m.Labels = d.Label
		if err := add("apps/v1", "Deployment", &appsv1.Deployment{ObjectMeta: m, Spec: d.Spec}); err != nil {
			return nil, err
		}
	}
	for _, w := range csv.Spec.WebhookDefinitions {
		if w.Type != v1alpha1.ValidatingAdmissionWebhook {
			return nil, fmt.Errorf("webhook %s: only validating webhooks are expected, not %s", w.GenerateName, w.Type)
		}
		spec, ok := deployments[w.DeploymentName]
		if !ok {
			return nil, fmt.Errorf("webhook %s names deployment %s, which the CSV does not install", w.GenerateName, w.DeploymentName)
		}
		target := intstr.FromInt32(w.ContainerPort)
		if w.TargetPort != nil {
			target = *w.TargetPort
		}
		service := &corev1.Service{ObjectMeta: meta(w.DomainName()+"-service", true), Spec: corev1.ServiceSpec{
			Selector: spec.Selector.MatchLabels,
			Ports:    []corev1.ServicePort{{Name: "443", Port: w.ContainerPort, TargetPort: target, Protocol: corev1.ProtocolTCP}},
		}}
		if err := add("v1", "Service", service); err != nil {
			return nil, err
		}
		config := &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: meta(w.GenerateName, false),
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{w.GetValidatingWebhook(ns, nil, nil)},
		}
		if err := add("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", config); err != nil {
			return nil, err
		}
	}
	for _, o := range bundle.Objects {
		if o.GetKind() == "ClusterServiceVersion" || o.GetKind() == "CustomResourceDefinition" {
			continue
		}
		c := o.DeepCopy()
		if c.GetKind() == "Service" || c.GetKind() == "Role" || c.GetKind() == "RoleBinding" ||
			c.GetKind() == "ServiceAccount" || c.GetKind() == "ConfigMap" || c.GetKind() == "Secret" ||
			c.GetKind() == "PodDisruptionBudget" {
			c.SetNamespace(ns)
		}
		items = append(items, c.Object)
	}
	return items, nil
}
