package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		file     string
		required []string
		want     []string // substrings, each expected in some problem; none for a clean file
	}{
		{file: "good.prom", required: []string{"nodemaintenance_phase", "controller_runtime_reconcile_total"}},
		{file: "good.prom", required: []string{"workqueue_depth"},
			want: []string{"workqueue_depth: required metric family is missing"}},
		{file: "bad_parse.prom", want: []string{
			"nodemaintenance_evictions: the family's lines are not one contiguous group",
			"parse error", "second HELP line"}},
		{file: "bad_grouping.prom", want: []string{
			"nodemaintenance_pending_pods: the family's lines are not one contiguous group"}},
		{file: "bad_lint.prom", want: []string{
			`nodemaintenance_evictions: counter metrics should have "_total" suffix`,
			"workqueue_depth: no help text",
			"nodemaintenance_drain_duration_seconds: histogram {}: bucket le=10 counts 2, less than le=1's 4",
			`nodemaintenance_drain_duration_seconds: histogram {}: le="+Inf" bucket counts 5 but _count is 6`,
			"reconcileCount: metric names should be written in 'snake_case' not 'camelCase'",
			"nodemaintenance_phase: metric not unique",
			"untyped_thing: no TYPE line (untyped)",
			"drain_time_milliseconds: use base unit",
		}},
	}
	for _, c := range cases {
		input, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range check(input, c.required) {
			got = append(got, p.String())
		}
		if len(c.want) == 0 && len(got) != 0 {
			t.Errorf("%s: want no problems, got:\n%s", c.file, strings.Join(got, "\n"))
		}
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || strings.Contains(g, w)
			}
			if !found {
				t.Errorf("%s: no problem contains %q; got:\n%s", c.file, w, strings.Join(got, "\n"))
			}
		}
	}
}

func TestCheckInputShape(t *testing.T) {
	for input, want := range map[string]string{
		"":                          "empty exposition",
		"# TYPE a gauge\na 1":       `the last line does not end with "\n"`,
		"# TYPE a gauge\r\na 1\r\n": "carriage return",
		"a\xff 1\n":                 "not valid UTF-8",
		"# HELP a A.\n# TYPE a gauge\n{\"a.b\"} 1\n":        "a.b: name is outside the classic character set",
		"# HELP a A.\n# TYPE a gauge\na{\"x.y\"=\"1\"} 1\n": `label name "x.y" is outside`,
	} {
		var got []string
		for _, p := range check([]byte(input), nil) {
			got = append(got, p.String())
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("%q: want a problem containing %q, got %q", input, want, got)
		}
	}
}
