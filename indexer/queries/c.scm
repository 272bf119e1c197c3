(function_definition
  declarator: (function_declarator declarator: (identifier) @name) body: (compound_statement) @body) @definition.function
(function_definition
  declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))
  body: (compound_statement) @body) @definition.function
(function_definition
  declarator: (pointer_declarator declarator: (pointer_declarator
    declarator: (function_declarator declarator: (identifier) @name)))
  body: (compound_statement) @body) @definition.function
(struct_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list) @body) @definition.class
(type_definition declarator: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(type_identifier) @reference.type
