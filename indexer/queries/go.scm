(function_declaration name: (identifier) @name body: (block) @body) @definition.function
(method_declaration
  receiver: (parameter_list (parameter_declaration
    type: [(type_identifier) @receiver (pointer_type (type_identifier) @receiver)]))
  name: (field_identifier) @name body: (block) @body) @definition.function
(type_declaration (type_spec name: (type_identifier) @name type: (struct_type) @body)) @definition.class
(type_declaration (type_spec name: (type_identifier) @name type: (interface_type) @body)) @definition.class
(type_declaration (type_spec name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (function_type) (map_type) (slice_type) (pointer_type)])) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (selector_expression field: (field_identifier) @reference.call))
(type_identifier) @reference.type
