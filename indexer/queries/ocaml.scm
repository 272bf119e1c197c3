; OCaml: modules, module types and classes are classes; a let binding with parameters (or a
; ``function`` body) is a function; type definitions are types. Bodies are expressions, not
; braces: a module's skeleton shows its bindings as written.
(module_definition (module_binding (module_name) @name body: (structure) @body)) @definition.class
(module_definition (module_binding (module_name) @name)) @definition.class
(module_type_definition (module_type_name) @name body: (signature) @body) @definition.class
(module_type_definition (module_type_name) @name) @definition.class
(class_definition (class_binding (class_name) @name)) @definition.class
(value_definition . (let_binding pattern: (value_name) @name (parameter))) @definition.function
(value_definition . (let_binding pattern: (value_name) @name body: (function_expression))) @definition.function
(type_definition (type_binding name: (type_constructor) @name)) @definition.type

(application_expression function: (value_path (value_name) @reference.call))
(type_constructor_path (type_constructor) @reference.type)
(module_path (module_name) @reference.type)
