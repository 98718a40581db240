# Entry points for developers and CI. Everything installs what it needs first.
#   make demo   - set up, bring the local cluster up and walk through one node maintenance
#   make demo-fleet - the same for a MaintenancePlan: three workers one after the other
#   make run    - run the operator locally (as its ServiceAccount) against the local cluster
#   make test   - set up and run every test (unit, then end-to-end on the local cluster)
#   make bench  - benchmarks and scripted scenarios, side by side with kubectl drain
#   make chaos  - the reliability experiments at full length
#   make image  - the operator's container image from the Containerfile (podman)
#   make deploy - the image and deploy/default on the local cluster's real kubelet node
#   make plugin / install / dist - the plugin alone, an installed release, release archives
SHELL := /bin/bash
PRESET ?= dev
PREFIX ?= /usr/local

.PHONY: all setup build plugin install install-plugin dist test unit-test e2e-test demo demo-fleet cluster-up cluster-down cluster-env \
        cluster-status testenv bench chaos run run-stop format format-check tidy clean \
        image deploy undeploy olm-bundle

all: build

## setup: install the Debian packages the build needs (quiet when already installed)
setup:
	@hack/setup.sh

## build: configure and build every C++ target; binaries land in build/bin/ (needs no Go)
build:
	@hack/setup.sh build
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET)

## plugin: kubectl-maintenance alone (release, C++ libraries linked in) into build-plugin/bin/;
##         needs only the C++ toolchain and the plugin's libraries (hack/setup.sh plugin)
plugin:
	@hack/setup.sh plugin
	@cmake --preset plugin >/dev/null
	@cmake --build --preset plugin --target kubectl-maintenance

## install: release build of both binaries, stripped, into $(PREFIX)/bin (make install PREFIX=~/.local)
install:
	@hack/setup.sh build
	@cmake --preset release >/dev/null
	@cmake --build --preset release --target kubectl-maintenance node-maintenance-operator
	@cmake --install build-release --prefix $(PREFIX) --strip

## install-plugin: the plugin alone (make plugin), stripped, into $(PREFIX)/bin
install-plugin: plugin
	@cmake --install build-plugin --prefix $(PREFIX) --strip

## dist: versioned archives of the plugin and the operator in dist/, SHA256SUMS, krew manifest
dist:
	@hack/dist.sh

## test: unit tests (also under ASan+UBSan), then end-to-end tests on the local cluster
test: setup
	@hack/test.sh

## unit-test: unit tests only, no cluster
unit-test: build
	@ctest --preset $(PRESET) -L unit

## e2e-test: end-to-end tests only (brings the cluster up if needed)
e2e-test: build
	@hack/test.sh --e2e-only

## bench: release build, every Google Benchmark, one summary table with in-run baselines
bench: setup
	@hack/bench.sh

## chaos: the reliability experiments at full length (kills, restarts, failover, network faults)
chaos: setup
	@hack/chaos.sh

## demo: the story's tour: cluster, workloads, operator, one maintenance from start to end
demo: setup
	@hack/demo.sh

## demo-fleet: a MaintenancePlan takes three workers out one after the other, PDB honoured
demo-fleet: setup
	@hack/demo-fleet.sh

## run: run the operator here, in the foreground, as its ServiceAccount, against the local cluster
##      (extra operator flags: make run RUN_ARGS="--max-parallel-maintenances=2 -v 1")
run: setup
	@hack/run.sh -- $(RUN_ARGS)

## run-stop: stop an operator started with `hack/run.sh --background` and remove its webhook
run-stop:
	@hack/run.sh --stop

## image: the container image from the shipped Containerfile, with podman, on base images made
##        here from Debian packages (no registry pull): localhost/node-maintenance-operator:dev
image: setup
	@hack/image-build.sh

## deploy: the cluster with its real node (if not up), the image, and deploy/default through the
##         overlay for that node (hack/deploy.sh); undeploy: uninstall as docs/operations.md says
deploy: setup
	@hack/deploy.sh up

undeploy:
	@hack/deploy.sh down

## olm-bundle: regenerate the OLM bundle deploy/olm from deploy/ and validate it
##             (hack/olm-bundle.sh; IMAGE=registry.example/nmo:v0.1.0 names the image)
olm-bundle:
	@hack/olm-bundle.sh $(if $(IMAGE),--image $(IMAGE))

## testenv: build (or find in the cache) the control-plane binaries
testenv:
	@hack/testenv-build.sh >/dev/null

cluster-up: setup
	@hack/cluster-up.sh

cluster-down:
	@hack/cluster-down.sh

## cluster-env: print exports for using the cluster by hand: eval "$$(make -s cluster-env)"
cluster-env:
	@hack/cluster-env.sh

cluster-status:
	@hack/cluster-status.sh --memory

format:
	@git ls-files '*.h' '*.cc' | xargs -r clang-format-14 -i

format-check:
	@git ls-files '*.h' '*.cc' | xargs -r clang-format-14 --dry-run --Werror

tidy: build
	@git ls-files 'src/*.cc' 'cmd/*.cc' | xargs -r clang-tidy-14 -p build --quiet

clean:
	@rm -rf build build-* dist
