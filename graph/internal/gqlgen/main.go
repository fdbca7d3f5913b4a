// Command gqlgen is gqlgen's generate with graph's own plugin: it loads the configuration as
// gqlgen's command does (--config, or gqlgen's default locations) and generates the executor,
// the models and the resolvers' stubs, and with them the fast path's types
// (graph/internal/fastpathgen). `go generate ./graph` runs it from the repository's top.
//
// gqlgen removes the executor's and the models' files before it generates them; when the
// generation fails (a schema error, a field the fast path has no writer for), this puts them
// back as they were, so a failed run leaves the package building.
package main

import (
	"errors"
	"flag"
	"log"
	"os"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen/config"

	"marketd/graph/internal/fastpathgen"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("gqlgen: ")
	filename := flag.String("config", "", "the config filename (gqlgen's default locations without it)")
	flag.Parse()
	var cfg *config.Config
	var err error
	if *filename != "" {
		cfg, err = config.LoadConfig(*filename)
	} else {
		cfg, err = config.LoadConfigFromDefaultLocations()
	}
	if err != nil {
		log.Fatal(err)
	}
	kept := map[string][]byte{}
	for _, f := range []string{cfg.Exec.Filename, cfg.Model.Filename} {
		if b, err := os.ReadFile(f); err == nil {
			kept[f] = b
		} else if f != "" && !errors.Is(err, os.ErrNotExist) {
			log.Fatal(err)
		}
	}
	if err := api.Generate(cfg, api.AddPlugin(fastpathgen.New())); err != nil {
		for f, b := range kept {
			if werr := os.WriteFile(f, b, 0o644); werr != nil {
				log.Printf("putting %s back: %v", f, werr)
			}
		}
		log.Fatalf("%v (the files it had removed are as they were)", err)
	}
}
