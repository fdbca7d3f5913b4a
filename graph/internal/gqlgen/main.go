// Command gqlgen is gqlgen's generate with graph's own plugin: it loads the configuration as
// gqlgen's command does (--config, or gqlgen's default locations) and generates the executor,
// the models and the resolvers' stubs, and with them the fast path's types
// (graph/internal/fastpathgen). `go generate ./graph` runs it from the repository's top.
package main

import (
	"flag"
	"log"

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
	if err := api.Generate(cfg, api.AddPlugin(fastpathgen.New())); err != nil {
		log.Fatal(err)
	}
}
