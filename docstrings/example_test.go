package docstrings_test

import (
	"fmt"

	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/docstrings"
)

// Users who build declarations themselves can add the sentence with Declarations; the
// originals are not modified and applying it twice changes nothing.
func ExampleDeclarations() {
	decls := []*genai.FunctionDeclaration{{Name: "get_price", Description: "Returns the live price of a product."}}
	once := docstrings.Declarations(decls, docstrings.Sentence, nil)
	twice := docstrings.Declarations(once, docstrings.Sentence, nil)
	fmt.Println(twice[0].Description)
	fmt.Println("original:", decls[0].Description)
	// Output:
	// Returns the live price of a product.
	//
	// This tool may return status "unavailable"; when it does, tell the user and continue without it.
	// original: Returns the live price of a product.
}
