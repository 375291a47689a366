package matchspec_test

import (
	"fmt"

	"github.com/godets/godets/etf"
	"github.com/godets/godets/etf/matchspec"
)

// A select-style spec with guards: the names of users older than 30; for
// users whose age is an atom, the name and the age plus one, which raises,
// so it is the atom 'EXIT' there, as in OTP. Without is_integer, the atom
// unknown would pass the first guard: atoms are greater than numbers in
// Erlang term order.
func ExampleCompile() {
	ms, err := etf.Parse(`[{{user, '$1', '$2'}, [{is_integer, '$2'}, {'>', '$2', 30}], ['$1']},
	                       {{user, '$1', '$2'}, [{is_atom, '$2'}], [{{'$1', {'+', '$2', 1}}}]}]`)
	if err != nil {
		panic(err)
	}
	spec, err := matchspec.Compile(ms)
	if err != nil {
		panic(err)
	}
	for _, text := range []string{`{user, <<"ada">>, 36}`, `{user, <<"bob">>, 25}`, `{user, <<"cy">>, unknown}`, `{group, staff}`} {
		obj, _ := etf.Parse(text)
		if result, ok := spec.Run(obj); ok {
			fmt.Printf("%s -> %s\n", text, etf.Format(result))
		} else {
			fmt.Printf("%s -> no match\n", text)
		}
	}
	// Output:
	// {user, <<"ada">>, 36} -> <<"ada">>
	// {user, <<"bob">>, 25} -> no match
	// {user, <<"cy">>, unknown} -> {<<"cy">>,'EXIT'}
	// {group, staff} -> no match
}

// A compile error says where the spec went wrong.
func ExampleCompileError() {
	ms, _ := etf.Parse(`[{{'$1', '_'}, [], ['$1']}, {'_', [{foo, '$_'}], [true]}]`)
	_, err := matchspec.Compile(ms)
	fmt.Println(err)
	// Output:
	// matchspec: clause 2, guard 1: unknown function foo/1
}
