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
(class_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(export_statement
  declaration: (class_declaration name: (identifier) @name body: (class_body) @body)) @definition.class

(call_expression function: (identifier) @reference.call)
(call_expression function: (member_expression property: (property_identifier) @reference.call))
(new_expression constructor: (identifier) @reference.type)
(class_heritage (identifier) @reference.type)
