(function_definition
  declarator: (function_declarator
    declarator: [(identifier) (field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name)
  body: (compound_statement) @body) @definition.function
(function_definition
  declarator: [(pointer_declarator (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))
    (reference_declarator (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier)] @name))]
  body: (compound_statement) @body) @definition.function
(template_declaration
  (function_definition
    declarator: (function_declarator
      declarator: [(identifier) (field_identifier) (qualified_identifier)] @name)
    body: (compound_statement) @body)) @definition.function
(class_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(struct_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(template_declaration
  (class_specifier name: (type_identifier) @name body: (field_declaration_list) @body)) @definition.class
(union_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(enum_specifier name: (type_identifier) @name body: (enumerator_list) @body) @definition.class
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(call_expression function: (qualified_identifier name: (identifier) @reference.call))
(type_identifier) @reference.type
