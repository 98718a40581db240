// Command promcheck is a strict checker for the Prometheus text exposition format (version
// 0.0.4), for the end-to-end tests of the operator's /metrics endpoint.
//
//	promcheck [-require NAME]... < exposition.txt
//
// It reads one exposition on standard input and exits 0 when it parses with the Prometheus
// text parser (github.com/prometheus/common/expfmt) and nothing below finds a problem;
// otherwise it prints one line per problem on standard output and exits 1 (2 for a usage or
// read error). Checked beyond what the parser enforces:
//
//   - the input is valid UTF-8, uses "\n" line ends and ends with one;
//   - each metric family is one contiguous group of lines (the format requires it, the parser
//     does not check it);
//   - every family has a TYPE line (no untyped families) and names that match the classic
//     character set [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no colon), so an older Prometheus
//     scrapes it too;
//   - histograms: ascending "le" bounds, cumulative counts that never decrease, a "+Inf"
//     bucket equal to _count; summaries: quantiles within [0, 1];
//   - counters: not negative, not NaN;
//   - every problem promlint (github.com/prometheus/client_golang/prometheus/testutil/promlint)
//     reports: naming conventions, HELP present, counter suffix _total, base units, duplicate
//     series;
//   - -require NAME: a family NAME is present (repeat the flag for several).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

type requiredNames []string

func (r *requiredNames) String() string     { return strings.Join(*r, ",") }
func (r *requiredNames) Set(v string) error { *r = append(*r, v); return nil }

// problem is one finding, printed as "<metric>: <text>" (or "<text>" alone when it concerns the
// whole input).
type problem struct{ metric, text string }

func (p problem) String() string {
	if p.metric == "" {
		return p.text
	}
	return p.metric + ": " + p.text
}

func main() {
	var required requiredNames
	flag.Var(&required, "require", "a metric family that must be present (repeatable)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(),
			"usage: promcheck [-require NAME]... < exposition\n"+
				"Exit 0: the Prometheus text exposition parses and has no problem; 1: problems printed; 2: usage.\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "promcheck: reading standard input: %v\n", err)
		os.Exit(2)
	}
	problems := check(input, required)
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "promcheck: %d problem(s)\n", len(problems))
		os.Exit(1)
	}
}

// check returns every problem found in one exposition.
func check(input []byte, required []string) []problem {
	var problems []problem
	add := func(metric, format string, args ...any) {
		problems = append(problems, problem{metric, fmt.Sprintf(format, args...)})
	}
	switch {
	case len(input) == 0:
		add("", "empty exposition")
		return problems
	case !utf8.Valid(input):
		add("", "input is not valid UTF-8")
		return problems
	case bytes.IndexByte(input, '\r') >= 0:
		add("", `carriage return found: lines must end with "\n" alone`)
	case input[len(input)-1] != '\n':
		add("", `the last line does not end with "\n"`)
	}
	problems = append(problems, checkGrouping(input)...)

	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(bytes.NewReader(input))
	if err != nil {
		add("", "parse error: %v", err)
		return problems
	}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	list := make([]*dto.MetricFamily, 0, len(names))
	for _, name := range names {
		mf := families[name]
		list = append(list, mf)
		problems = append(problems, checkFamily(mf)...)
	}
	lint, err := promlint.NewWithMetricFamilies(list).Lint()
	if err != nil {
		add("", "promlint: %v", err)
	}
	for _, p := range lint {
		add(p.Metric, "%s", p.Text)
	}
	for _, name := range required {
		if _, ok := families[name]; !ok {
			add(name, "required metric family is missing")
		}
	}
	return problems
}

// checkGrouping reports a family whose lines are not one contiguous group. A sample line
// belongs to the current group when its name is the family's, or (histogram, summary) the
// family's name with a _bucket, _sum, _count or _created suffix.
func checkGrouping(input []byte) []problem {
	var problems []problem
	closed := map[string]bool{}
	current, currentType := "", ""
	start := func(name, typ string) {
		if name == current {
			if typ != "" {
				currentType = typ
			}
			return
		}
		if current != "" {
			closed[current] = true
		}
		if closed[name] {
			problems = append(problems, problem{name, "the family's lines are not one contiguous group"})
		}
		current, currentType = name, typ
	}
	belongs := func(sample string) bool {
		if sample == current {
			return true
		}
		var suffixes []string
		switch currentType {
		case "histogram", "gaugehistogram":
			suffixes = []string{"_bucket", "_sum", "_count", "_created"}
		case "summary":
			suffixes = []string{"_sum", "_count", "_created"}
		case "counter":
			suffixes = []string{"_created"}
		}
		for _, s := range suffixes {
			if sample == current+s {
				return true
			}
		}
		return false
	}
	scanner := bufio.NewScanner(bytes.NewReader(input))
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := strings.TrimLeft(scanner.Text(), " \t")
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			fields := strings.Fields(line)
			if len(fields) >= 3 && (fields[1] == "HELP" || fields[1] == "TYPE") {
				typ := ""
				if fields[1] == "TYPE" && len(fields) >= 4 {
					typ = fields[3]
				}
				start(fields[2], typ)
			}
		default:
			name := line
			if i := strings.IndexAny(name, "{ \t"); i >= 0 {
				name = name[:i]
			}
			if !belongs(name) {
				start(name, "")
			}
		}
	}
	return problems
}

// checkFamily reports what the parser accepts but a strict reading of the format does not.
func checkFamily(mf *dto.MetricFamily) []problem {
	var problems []problem
	name := mf.GetName()
	add := func(format string, args ...any) {
		problems = append(problems, problem{name, fmt.Sprintf(format, args...)})
	}
	if !metricNameRE.MatchString(name) {
		add("name is outside the classic character set [a-zA-Z_:][a-zA-Z0-9_:]*")
	}
	if mf.GetType() == dto.MetricType_UNTYPED {
		add("no TYPE line (untyped)")
	}
	badLabels := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !labelNameRE.MatchString(lp.GetName()) && !badLabels[lp.GetName()] {
				badLabels[lp.GetName()] = true
				add("label name %q is outside the character set [a-zA-Z_][a-zA-Z0-9_]*", lp.GetName())
			}
		}
		series := seriesString(m)
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			if v := m.GetCounter().GetValue(); v < 0 || math.IsNaN(v) {
				add("counter %s has value %v", series, v)
			}
		case dto.MetricType_HISTOGRAM:
			problems = append(problems, checkHistogram(name, series, m.GetHistogram())...)
		case dto.MetricType_SUMMARY:
			for _, q := range m.GetSummary().GetQuantile() {
				if q.GetQuantile() < 0 || q.GetQuantile() > 1 || math.IsNaN(q.GetQuantile()) {
					add("summary %s has quantile %v outside [0, 1]", series, q.GetQuantile())
				}
			}
		}
	}
	return problems
}

func checkHistogram(name, series string, h *dto.Histogram) []problem {
	var problems []problem
	add := func(format string, args ...any) {
		problems = append(problems, problem{name, fmt.Sprintf(format, args...)})
	}
	buckets := h.GetBucket()
	if len(buckets) == 0 {
		add("histogram %s has no buckets", series)
		return problems
	}
	for i := 1; i < len(buckets); i++ {
		prev, cur := buckets[i-1], buckets[i]
		if !(cur.GetUpperBound() > prev.GetUpperBound()) {
			add("histogram %s: bucket le=%v follows le=%v (bounds must ascend)", series,
				cur.GetUpperBound(), prev.GetUpperBound())
		}
		if cur.GetCumulativeCount() < prev.GetCumulativeCount() {
			add("histogram %s: bucket le=%v counts %d, less than le=%v's %d (counts are cumulative)",
				series, cur.GetUpperBound(), cur.GetCumulativeCount(), prev.GetUpperBound(),
				prev.GetCumulativeCount())
		}
	}
	last := buckets[len(buckets)-1]
	if !math.IsInf(last.GetUpperBound(), +1) {
		add(`histogram %s has no le="+Inf" bucket`, series)
	} else if last.GetCumulativeCount() != h.GetSampleCount() {
		add(`histogram %s: le="+Inf" bucket counts %d but _count is %d`, series,
			last.GetCumulativeCount(), h.GetSampleCount())
	}
	return problems
}

// seriesString renders a metric's labels as {a="b",...} for messages.
func seriesString(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		parts = append(parts, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
