; Swift: classes, structs, enums, actors, extensions (named after the type they extend) and
; protocols are classes; functions, initializers and computed properties are functions.
(class_declaration name: (type_identifier) @name body: [(class_body) (enum_class_body)] @body) @definition.class
(class_declaration name: (user_type . (type_identifier) @name) body: (class_body) @body) @definition.class
(protocol_declaration name: (type_identifier) @name body: (protocol_body) @body) @definition.class
(function_declaration name: (simple_identifier) @name body: (function_body) @body) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.function
(init_declaration "init" @name body: (function_body) @body) @definition.function
(init_declaration "init" @name) @definition.function
(deinit_declaration "deinit" @name body: (function_body) @body) @definition.function
(property_declaration name: (pattern bound_identifier: (simple_identifier) @name)
  computed_value: (computed_property) @body) @definition.function
(typealias_declaration name: (type_identifier) @name) @definition.type

(call_expression . (simple_identifier) @reference.call)
(call_expression . (navigation_expression suffix: (navigation_suffix suffix: (simple_identifier) @reference.call)))
(inheritance_specifier inherits_from: (user_type (type_identifier) @reference.type))
(user_type (type_identifier) @reference.type)
(attribute (user_type (type_identifier) @reference.call))
; a type named before a static member (``BrewError.outOfBeans``, ``Foo.shared``)
((navigation_expression target: (simple_identifier) @reference.type) (#match? @reference.type "^[A-Z]"))
