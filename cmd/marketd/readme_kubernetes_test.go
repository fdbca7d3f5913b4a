package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The Kubernetes manifest of this folder's README is applied as it is, so it is held to what
// the README promises of it: it parses, every field it sets is one Kubernetes has (each kind is
// read strictly), its names refer to one another (selectors, named ports, the volume claim),
// and the Deployment runs the image's `marketd serve` as the image's user, on a read-only root
// filesystem, with the settings its environment gives parsed as serve parses them: probes on
// /healthz and /readyz at the port serve listens on, the KEK read from a file of a mounted
// Secret (the one the README's kubectl command makes), the store in a folder of its own on the
// claimed volume, and a grace period that covers the drain and the requests in flight.
func TestREADME_KubernetesManifestRunsTheImageAsDocumented(t *testing.T) {
	raw, err := os.ReadFile("README.md") // cmd/marketd's, where the test runs
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, promise := range []string{"| entrypoint | `" + imageEntrypoint + "`", "| user | `65532:65532` |",
		"| listen address | `MARKETD_ADDR=" + imageEnv["MARKETD_ADDR"] + "`", "`MARKETD_DB=" + imageEnv["MARKETD_DB"] + "`"} {
		if !strings.Contains(readme, promise) {
			t.Errorf("the README's table of the image no longer says %q; this test runs the manifest on that image", promise)
		}
	}
	m := kubernetesManifest(t, readme)

	if len(m.deployments) != 1 {
		t.Fatalf("the manifest declares %d Deployments; want marketd's one", len(m.deployments))
	}
	d := m.deployments[0]
	pod := d.Template.Spec
	if len(d.Selector.MatchLabels) == 0 || !subset(d.Selector.MatchLabels, d.Template.Metadata.Labels) {
		t.Errorf("the Deployment's selector %v does not select its pods' labels %v", d.Selector.MatchLabels, d.Template.Metadata.Labels)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("the pod has %d containers; want marketd alone", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The image, run as the image runs it: its entrypoint is marketd serve, and arguments after
	// the image's name are serve's flags.
	if repo, _, _ := strings.Cut(strings.SplitN(c.Image, "@", 2)[0], ":"); c.Image == "" || path.Base(repo) != "marketd" {
		t.Errorf("container image %q; want the marketd image", c.Image)
	}
	if c.Command != nil && strings.Join(c.Command, " ") != imageEntrypoint {
		t.Errorf("the container's command %q replaces the image's entrypoint, %s", c.Command, imageEntrypoint)
	}
	for _, a := range c.Args {
		if !strings.HasPrefix(a, "-") {
			t.Errorf("container argument %q: the image runs serve, whose arguments are flags", a)
		}
	}

	// The settings as serve reads them: the image's environment, then the container's, then
	// its flags.
	env := maps.Clone(imageEnv)
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	cfg := serveConfig(t, env, c.Args)
	if cfg.dev {
		t.Error("the manifest runs marketd in dev mode (the tap faucet, cookies over plain http)")
	}
	host, listenPort, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		t.Fatalf("listen address %q: %v", cfg.addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		t.Errorf("serve listens on %s, which the kubelet's probes and the Service cannot reach", cfg.addr)
	}
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !slices.Contains(slices.Collect(maps.Values(ports)), atoi(listenPort)) {
		t.Errorf("the container's ports %v do not include the port serve listens on, %s", ports, listenPort)
	}
	resolve := func(port string) int { // a port by number or by the container port's name
		if n, err := strconv.Atoi(port); err == nil {
			return n
		}
		return ports[port]
	}

	// Probes: liveness on /healthz, readiness on /readyz, at the port serve listens on.
	for _, p := range []struct {
		name, path string
		probe      *k8sProbe
	}{
		{"liveness", "/healthz", c.LivenessProbe},
		{"readiness", "/readyz", c.ReadinessProbe},
		{"startup", "", c.StartupProbe},
	} {
		switch {
		case p.probe == nil && p.path == "":
		case p.probe == nil || p.probe.HTTPGet == nil:
			t.Errorf("the container has no %s probe by HTTP GET", p.name)
		case p.path != "" && p.probe.HTTPGet.Path != p.path, p.path == "" && !slices.Contains([]string{"/healthz", "/readyz"}, p.probe.HTTPGet.Path):
			t.Errorf("the %s probe asks %s; want %s", p.name, p.probe.HTTPGet.Path, orDefault(p.path, "/healthz or /readyz"))
		case resolve(p.probe.HTTPGet.Port) != atoi(listenPort):
			t.Errorf("the %s probe asks port %q, not the one serve listens on (%s)", p.name, p.probe.HTTPGet.Port, listenPort)
		}
	}
	// /readyz waits up to 2 s for the store's answer (rest/routes.go): a probe that gives up
	// sooner takes a slow answer for a failure, and one failure takes the pod out of service.
	if r := c.ReadinessProbe; r != nil && valueOr(r.TimeoutSeconds, 1) <= 2 {
		t.Errorf("the readiness probe gives up after %d s, before /readyz's own 2 s wait for the store", valueOr(r.TimeoutSeconds, 1))
	}

	// The image's user, never root, and a root filesystem it cannot write.
	if nonRoot := orDefault(c.SecurityContext.RunAsNonRoot, pod.SecurityContext.RunAsNonRoot); nonRoot == nil || !*nonRoot {
		t.Error("runAsNonRoot is not true for the container")
	}
	if uid := orDefault(c.SecurityContext.RunAsUser, pod.SecurityContext.RunAsUser); uid == nil || *uid != imageUID {
		t.Errorf("the container runs as uid %v; want the image's user, %d", deref(uid), imageUID)
	}
	if ro := c.SecurityContext.ReadOnlyRootFilesystem; ro == nil || !*ro {
		t.Error("the container's root filesystem is not read-only")
	}
	if esc := c.SecurityContext.AllowPrivilegeEscalation; esc == nil || *esc {
		t.Error("the container may escalate its privileges (allowPrivilegeEscalation is not false)")
	}

	volumes := map[string]k8sVolume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounts := map[string]k8sMount{} // by path
	for _, vm := range c.VolumeMounts {
		if _, ok := volumes[vm.Name]; !ok {
			t.Errorf("the container mounts volume %q, which the pod does not declare", vm.Name)
		}
		mounts[path.Clean(vm.MountPath)] = vm
	}
	// mountOf is the mount that holds file, and its volume.
	mountOf := func(file string) (k8sMount, k8sVolume, bool) {
		for dir := path.Dir(file); dir != "/"; dir = path.Dir(dir) {
			if vm, ok := mounts[dir]; ok {
				return vm, volumes[vm.Name], true
			}
		}
		return k8sMount{}, k8sVolume{}, false
	}

	// The store in a folder of its own on the claimed volume: the volume's root belongs to
	// root, and marketd makes its store's folder 0700, which it can do only to one it creates.
	db, ok := strings.CutPrefix(cfg.store.DB, "sqlite://")
	if !ok {
		t.Fatalf("MARKETD_DB %q: the manifest is documented on the embedded store", cfg.store.DB)
	}
	vm, v, ok := mountOf(db)
	switch {
	case !ok:
		t.Errorf("the store, %s, is on the container's own filesystem: no volume holds it", db)
	case v.PersistentVolumeClaim == nil || !slices.Contains(m.claims, v.PersistentVolumeClaim.ClaimName):
		t.Errorf("the store, %s, is on volume %q, which is not a claim the manifest declares", db, vm.Name)
	case vm.ReadOnly:
		t.Errorf("the store's volume is mounted read-only")
	case path.Dir(db) == path.Clean(vm.MountPath):
		t.Errorf("the store, %s, is at the root of its volume: marketd cannot make that folder its own", db)
	}
	if _, ok := mounts["/data"]; !ok {
		t.Error("nothing is mounted on /data, the image's volume")
	}
	if d.Replicas != 1 || d.Strategy.Type != "Recreate" {
		t.Errorf("%d replicas, strategy %q: one SQLite store has one writer (1 replica, Recreate)", d.Replicas, d.Strategy.Type)
	}
	if vm, ok := mounts["/tmp"]; !ok || vm.ReadOnly {
		t.Error("/tmp is not a writable volume: with a read-only root filesystem SQLite has nowhere to sort")
	}

	// The KEK, from a file of the Secret the README's command makes, readable by marketd's
	// user and no one else.
	kekCommand := regexp.MustCompile(`kubectl create secret generic (\S+) --from-file=([^=\s]+)=`).FindStringSubmatch(readme)
	if kekCommand == nil {
		t.Fatal("the README gives no `kubectl create secret generic NAME --from-file=KEY=FILE` for the KEK")
	}
	if cfg.kekFile == "" || !path.IsAbs(cfg.kekFile) {
		t.Fatalf("MARKETD_KEK_FILE is %q; want the path of the KEK's file in its Secret's volume", cfg.kekFile)
	}
	vm, v, ok = mountOf(cfg.kekFile)
	switch {
	case !ok || v.Secret == nil:
		t.Errorf("MARKETD_KEK_FILE (%s) is not in a volume of a Secret", cfg.kekFile)
	case v.Secret.SecretName != kekCommand[1]:
		t.Errorf("the KEK's volume is of Secret %q; the README's command makes %q", v.Secret.SecretName, kekCommand[1])
	case !vm.ReadOnly:
		t.Error("the KEK's volume is not mounted read-only")
	default:
		rel := strings.TrimPrefix(cfg.kekFile, path.Clean(vm.MountPath)+"/")
		key, mode := rel, valueOr(v.Secret.DefaultMode, 0o644) // Kubernetes' default mode
		if len(v.Secret.Items) > 0 {
			key = ""
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					key, mode = it.Key, valueOr(it.Mode, mode)
				}
			}
		}
		if key != kekCommand[2] {
			t.Errorf("MARKETD_KEK_FILE names %q of the Secret, which holds the KEK under %q", rel, kekCommand[2])
		}
		// A Secret's files belong to root, their group the pod's fsGroup.
		fsGroup := pod.SecurityContext.FSGroup
		readable := mode&0o004 != 0 || mode&0o040 != 0 && fsGroup != nil
		if !readable || mode&0o007 != 0 {
			t.Errorf("the KEK's file has mode %#o (fsGroup %v): want it readable by marketd's user through the fsGroup, and by no one else", mode, deref(fsGroup))
		}
	}

	// Shutdown: readiness fails for the drain delay, then requests in flight get up to 30 s
	// (main.go); the kubelet's SIGKILL must not come sooner.
	if grace := time.Duration(valueOr(pod.TerminationGracePeriodSeconds, 30)) * time.Second; grace < cfg.drainDelay+30*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s is less than the drain delay (%s) and the 30 s requests in flight get", grace, cfg.drainDelay)
	}

	for _, s := range m.services {
		if len(s.Selector) == 0 || !subset(s.Selector, d.Template.Metadata.Labels) {
			t.Errorf("the Service's selector %v does not select marketd's pods %v", s.Selector, d.Template.Metadata.Labels)
		}
		for _, p := range s.Ports {
			if resolve(orDefault(p.TargetPort, strconv.Itoa(p.Port))) != atoi(listenPort) {
				t.Errorf("the Service's port %d goes to %q, not the port serve listens on (%s)", p.Port, p.TargetPort, listenPort)
			}
		}
	}
}

// The image as cmd/marketd/image builds it (its own test pins these) and the README's table
// of it states.
const (
	imageEntrypoint = "/usr/local/bin/marketd serve"
	imageUID        = 65532
)

// imageEnv is the environment the image sets.
var imageEnv = map[string]string{"MARKETD_DB": "sqlite:///data/marketd.db", "MARKETD_ADDR": "0.0.0.0:8080"}

// serveConfig parses env (MARKETD_ variables, each one serve reads) and args as serve does.
func serveConfig(t *testing.T, env map[string]string, args []string) *config {
	t.Helper()
	byEnv := map[string]string{}
	for _, s := range settings(new(config)) {
		byEnv[s.env] = s.name
		if _, set := os.LookupEnv(s.env); set { // this process's own (TestMain's KEK) stand in for nothing
			t.Setenv(s.env, s.def)
		}
	}
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !strings.HasPrefix(name, "MARKETD_") {
			continue // OTEL_ and the like, read by their own libraries
		}
		flag, ok := byEnv[name]
		if !ok {
			t.Errorf("the manifest sets %s, which is no setting of marketd", name)
			continue
		}
		flags = append(flags, "-"+flag+"="+env[name])
	}
	c, rest, err := parseConfig("serve", append(flags, args...))
	if err != nil {
		t.Fatalf("serve does not take the manifest's settings: %v", err)
	}
	if len(rest) > 0 {
		t.Fatalf("serve takes no arguments; the manifest leaves %q", rest)
	}
	if err := c.checkDev(); err != nil {
		t.Error(err)
	}
	return c
}

// k8sManifest is what the README's manifest declares, by kind.
type k8sManifest struct {
	deployments []deploymentSpec
	services    []serviceSpec
	claims      []string // the PersistentVolumeClaims' names
}

// kubernetesManifest reads the YAML block after the README's "**Kubernetes.**" paragraph:
// each document's kind must be one this test knows, with its apiVersion, a name, and no
// field in its spec that the kind does not have.
func kubernetesManifest(t *testing.T, readme string) k8sManifest {
	t.Helper()
	_, after, ok := strings.Cut(readme, "\n**Kubernetes.**")
	if !ok {
		t.Fatal("the README has no **Kubernetes.** paragraph")
	}
	section, _, _ := strings.Cut(after, "\n#")
	_, block, ok := strings.Cut(section, "\n```yaml\n")
	if !ok {
		t.Fatal("the README's Kubernetes paragraph has no ```yaml block")
	}
	block, _, _ = strings.Cut(block, "\n```")
	apiVersions := map[string]string{"Deployment": "apps/v1", "Service": "v1", "PersistentVolumeClaim": "v1"}
	var m k8sManifest
	dec := yaml.NewDecoder(strings.NewReader(block))
	dec.KnownFields(true)
	for i := 1; ; i++ {
		var obj struct {
			APIVersion string    `yaml:"apiVersion"`
			Kind       string    `yaml:"kind"`
			Metadata   k8sMeta   `yaml:"metadata"`
			Spec       yaml.Node `yaml:"spec"`
		}
		err := dec.Decode(&obj)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the manifest's document %d does not parse: %v", i, err)
		}
		what := fmt.Sprintf("the manifest's document %d (%s %q)", i, obj.Kind, obj.Metadata.Name)
		if want, ok := apiVersions[obj.Kind]; !ok || obj.APIVersion != want {
			t.Fatalf("%s: apiVersion %q; want one of %v (a new kind needs its checks here)", what, obj.APIVersion, apiVersions)
		}
		if obj.Metadata.Name == "" {
			t.Errorf("%s has no name", what)
		}
		switch obj.Kind {
		case "Deployment":
			m.deployments = append(m.deployments, strictly[deploymentSpec](t, what, &obj.Spec))
		case "Service":
			m.services = append(m.services, strictly[serviceSpec](t, what, &obj.Spec))
		case "PersistentVolumeClaim":
			strictly[claimSpec](t, what, &obj.Spec)
			m.claims = append(m.claims, obj.Metadata.Name)
		}
	}
	return m
}

// strictly decodes a spec into T, refusing a field T does not have.
func strictly[T any](t *testing.T, what string, spec *yaml.Node) T {
	t.Helper()
	var out T
	b, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: its spec: %v", what, err)
	}
	return out
}

// The kinds' fields this test knows: the ones the manifest may set, by Kubernetes' names.
// A port is a string: a number or a port's name, as Kubernetes takes either.
type (
	k8sMeta struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	}
	claimSpec struct {
		AccessModes      []string `yaml:"accessModes"`
		StorageClassName *string  `yaml:"storageClassName"`
		Resources        struct {
			Requests map[string]string `yaml:"requests"`
		} `yaml:"resources"`
	}
	deploymentSpec struct {
		Replicas int `yaml:"replicas"`
		Strategy struct {
			Type string `yaml:"type"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata k8sMeta `yaml:"metadata"`
			Spec     podSpec `yaml:"spec"`
		} `yaml:"template"`
	}
	podSpec struct {
		TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot   *bool  `yaml:"runAsNonRoot"`
			RunAsUser      *int64 `yaml:"runAsUser"`
			RunAsGroup     *int64 `yaml:"runAsGroup"`
			FSGroup        *int64 `yaml:"fsGroup"`
			SeccompProfile struct {
				Type string `yaml:"type"`
			} `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		Containers []k8sContainer `yaml:"containers"`
		Volumes    []k8sVolume    `yaml:"volumes"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Ports   []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
			Protocol      string `yaml:"protocol"`
		} `yaml:"ports"`
		Env []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		SecurityContext struct {
			RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
			RunAsUser                *int64 `yaml:"runAsUser"`
			RunAsGroup               *int64 `yaml:"runAsGroup"`
			ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
				Add  []string `yaml:"add"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		StartupProbe   *k8sProbe `yaml:"startupProbe"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []k8sMount `yaml:"volumeMounts"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
		InitialDelaySeconds int  `yaml:"initialDelaySeconds"`
		PeriodSeconds       int  `yaml:"periodSeconds"`
		TimeoutSeconds      *int `yaml:"timeoutSeconds"`
		FailureThreshold    int  `yaml:"failureThreshold"`
		SuccessThreshold    int  `yaml:"successThreshold"`
	}
	k8sMount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}
	k8sVolume struct {
		Name                  string `yaml:"name"`
		PersistentVolumeClaim *struct {
			ClaimName string `yaml:"claimName"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"persistentVolumeClaim"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
			Optional    *bool  `yaml:"optional"`
			Items       []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
				Mode *int   `yaml:"mode"`
			} `yaml:"items"`
		} `yaml:"secret"`
		EmptyDir *struct {
			Medium    string `yaml:"medium"`
			SizeLimit string `yaml:"sizeLimit"`
		} `yaml:"emptyDir"`
	}
	serviceSpec struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
			Protocol   string `yaml:"protocol"`
		} `yaml:"ports"`
	}
)

// subset tells whether every label of want is in have.
func subset(want, have map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// orDefault is v, or def when v is the zero value (a field the manifest leaves out).
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// valueOr is *p, or def when p is nil (a field the manifest leaves out).
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// deref is *p, or nil.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// atoi is the number s spells, or -1.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}
