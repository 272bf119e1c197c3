; Elixir: modules and protocols (and their implementations) are classes, named as written
; (``Shop.Cart``); def, defp, defmacro, defguard and defdelegate are functions. Everything
; is a call in this grammar: the keyword is the call's target.
((call target: (identifier) @_keyword (arguments . (alias) @name) (do_block) @body) @definition.class
  (#any-of? @_keyword "defmodule" "defprotocol" "defimpl"))
((call target: (identifier) @_keyword
   (arguments . [(call target: (identifier) @name)
                 (identifier) @name
                 (binary_operator left: (call target: (identifier) @name) operator: "when")])
   (do_block) @body) @definition.function
  (#any-of? @_keyword "def" "defp" "defmacro" "defmacrop" "defguard" "defguardp" "defn" "defnp"))
((call target: (identifier) @_keyword
   (arguments . [(call target: (identifier) @name)
                 (identifier) @name
                 (binary_operator left: (call target: (identifier) @name) operator: "when")])) @definition.function
  (#any-of? @_keyword "def" "defp" "defmacro" "defmacrop" "defguard" "defguardp" "defdelegate" "defn" "defnp"))

; (``#not-any-of?`` is not applied by this tree-sitter: a pattern it does not know is ignored)
((call target: (identifier) @reference.call)
  (#not-match? @reference.call "^(def[a-z]*|alias|import|require|use|quote|unquote|moduledoc|doc|spec|type|typep|opaque|callback|impl|behaviour|typedoc)$"))
(call target: (dot right: (identifier) @reference.call))
(call target: (dot left: (alias) @reference.type))
(alias) @reference.type
