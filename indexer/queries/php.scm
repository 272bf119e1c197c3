; PHP: classes, interfaces, traits and enums are classes; functions and methods are
; functions. Namespaces are not definitions (the classes inside are the roots).
(class_declaration name: (name) @name body: (declaration_list) @body) @definition.class
(interface_declaration name: (name) @name body: (declaration_list) @body) @definition.class
(trait_declaration name: (name) @name body: (declaration_list) @body) @definition.class
(enum_declaration name: (name) @name body: (enum_declaration_list) @body) @definition.class
(method_declaration name: (name) @name body: (compound_statement) @body) @definition.function
(method_declaration name: (name) @name !body) @definition.function
(function_definition name: (name) @name body: (compound_statement) @body) @definition.function

(function_call_expression function: (name) @reference.call)
(function_call_expression function: (qualified_name (name) @reference.call))
(member_call_expression name: (name) @reference.call)
(nullsafe_member_call_expression name: (name) @reference.call)
(scoped_call_expression name: (name) @reference.call)
; ``static``, ``self`` and ``parent`` name no class of their own
((scoped_call_expression scope: (name) @reference.type)
  (#not-match? @reference.type "^(static|self|parent)$"))
((class_constant_access_expression . (name) @reference.type)
  (#not-match? @reference.type "^(static|self|parent)$"))
((object_creation_expression (name) @reference.type)
  (#not-match? @reference.type "^(static|self|parent)$"))
(object_creation_expression (qualified_name (name) @reference.type))
((named_type (name) @reference.type) (#not-match? @reference.type "^(static|self|parent)$"))
(named_type (qualified_name (name) @reference.type))
(base_clause (name) @reference.type)
(base_clause (qualified_name (name) @reference.type))
(class_interface_clause (name) @reference.type)
(class_interface_clause (qualified_name (name) @reference.type))
(use_declaration (name) @reference.type)
(attribute (name) @reference.call)
