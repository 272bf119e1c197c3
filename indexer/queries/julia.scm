; Julia: structs are classes, abstract types are types, functions (long and short form) and
; macros are functions, a method of another module's function by its own name
; (``Base.show`` -> ``show``). Modules are not definitions (a package is one module).
(struct_definition (type_head [(identifier) @name
                               (parametrized_type_expression . (identifier) @name)
                               (binary_expression . [(identifier) @name
                                                     (parametrized_type_expression . (identifier) @name)])])) @definition.class
(abstract_definition (type_head [(identifier) @name (binary_expression . (identifier) @name)])) @definition.type
(function_definition
  (signature [(call_expression . [(identifier) @name (field_expression (identifier) @name .)])
              (where_expression . (call_expression . [(identifier) @name (field_expression (identifier) @name .)]))
              (typed_expression . (call_expression . [(identifier) @name (field_expression (identifier) @name .)]))])
  (block) @body) @definition.function
(function_definition
  (signature [(call_expression . [(identifier) @name (field_expression (identifier) @name .)])
              (where_expression . (call_expression . [(identifier) @name (field_expression (identifier) @name .)]))
              (typed_expression . (call_expression . [(identifier) @name (field_expression (identifier) @name .)]))])) @definition.function
(assignment . (call_expression . [(identifier) @name (field_expression (identifier) @name .)])) @definition.function
(assignment . (where_expression . (call_expression . (identifier) @name))) @definition.function
(macro_definition (signature (call_expression . (identifier) @name))) @definition.function

(call_expression . (identifier) @reference.call)
(call_expression . (field_expression (identifier) @reference.call .))
(macrocall_expression (macro_identifier (identifier) @reference.call))
(typed_expression (identifier) @reference.type .)
(parametrized_type_expression . (identifier) @reference.type)
(curly_expression (identifier) @reference.type)
