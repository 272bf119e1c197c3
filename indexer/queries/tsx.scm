(function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(generator_function_declaration name: (identifier) @name body: (statement_block) @body) @definition.function
(export_statement
  declaration: (function_declaration name: (identifier) @name body: (statement_block) @body)) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])) @definition.function
(export_statement
  declaration: (lexical_declaration
    (variable_declarator name: (identifier) @name
      value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]))) @definition.function
(method_definition name: (property_identifier) @name body: (statement_block) @body) @definition.function
(class_declaration name: (type_identifier) @name body: (class_body) @body) @definition.class
(abstract_class_declaration name: (type_identifier) @name body: (class_body) @body) @definition.class
(export_statement
  declaration: (class_declaration name: (type_identifier) @name body: (class_body) @body)) @definition.class
(export_statement
  declaration: (abstract_class_declaration name: (type_identifier) @name body: (class_body) @body)) @definition.class
(interface_declaration name: (type_identifier) @name body: (interface_body) @body) @definition.class
(export_statement
  declaration: (interface_declaration name: (type_identifier) @name body: (interface_body) @body)) @definition.class
(enum_declaration name: (identifier) @name body: (enum_body) @body) @definition.class
(export_statement
  declaration: (enum_declaration name: (identifier) @name body: (enum_body) @body)) @definition.class
(type_alias_declaration name: (type_identifier) @name) @definition.type
(export_statement
  declaration: (type_alias_declaration name: (type_identifier) @name)) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (member_expression property: (property_identifier) @reference.call))
(new_expression constructor: (identifier) @reference.type)
(type_identifier) @reference.type
