; Objective-C: interfaces, implementations and protocols are classes (an implementation and
; its interface share the class's name); methods are functions, named by their selector's
; first part; C functions and types as in c.scm.
(class_interface . (identifier) @name) @definition.class
(class_implementation . (identifier) @name) @definition.class
(protocol_declaration . (identifier) @name) @definition.class
(method_definition . (_) . (method_type)? . (identifier) @name (compound_statement) @body) @definition.function
(method_declaration . (_) . (method_type)? . (identifier) @name) @definition.function
(function_definition
  declarator: (function_declarator declarator: (identifier) @name) body: (compound_statement) @body) @definition.function
(struct_specifier name: (type_identifier) @name body: (field_declaration_list) @body) @definition.class
(type_definition declarator: (type_identifier) @name) @definition.type

(message_expression method: (identifier) @reference.call)
(call_expression function: (identifier) @reference.call)
(class_interface superclass: (identifier) @reference.type)
(type_identifier) @reference.type
