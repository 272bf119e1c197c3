; C#: types are classes, members with code are functions; namespaces are not definitions
; (like Java's packages: the classes inside are the roots).
(class_declaration name: (identifier) @name body: (declaration_list) @body) @definition.class
(interface_declaration name: (identifier) @name body: (declaration_list) @body) @definition.class
(struct_declaration name: (identifier) @name body: (declaration_list) @body) @definition.class
(record_declaration name: (identifier) @name body: (declaration_list) @body) @definition.class
(record_declaration name: (identifier) @name !body) @definition.class
(enum_declaration name: (identifier) @name body: (enum_member_declaration_list) @body) @definition.class
; an expression body (``=> expr``) stays in the skeleton: it is one line, and ``{ ... }`` in
; its place would misquote the code
(method_declaration name: (identifier) @name body: (block) @body) @definition.function
(method_declaration name: (identifier) @name !body) @definition.function
(method_declaration name: (identifier) @name body: (arrow_expression_clause)) @definition.function
(constructor_declaration name: (identifier) @name body: (block) @body) @definition.function
(constructor_declaration name: (identifier) @name body: (arrow_expression_clause)) @definition.function
(destructor_declaration name: (identifier) @name body: (block) @body) @definition.function
; a property with code is a function; an auto-property (``{ get; set; }``) is a field
(property_declaration name: (identifier) @name
  accessors: (accessor_list (accessor_declaration body: (_))) @body) @definition.function
(property_declaration name: (identifier) @name value: (arrow_expression_clause)) @definition.function
(delegate_declaration name: (identifier) @name) @definition.type

(invocation_expression function: (identifier) @reference.call)
(invocation_expression function: (member_access_expression name: (identifier) @reference.call))
(invocation_expression function: (member_access_expression name: (generic_name (identifier) @reference.call)))
(invocation_expression function: (generic_name (identifier) @reference.call))
(member_binding_expression name: (identifier) @reference.call)
(object_creation_expression type: (identifier) @reference.type)
(base_list (identifier) @reference.type)
(base_list (generic_name (identifier) @reference.type))
(_ type: (identifier) @reference.type)
(_ returns: (identifier) @reference.type)
(generic_name (identifier) @reference.type)
(type_argument_list (identifier) @reference.type)
(attribute name: (identifier) @reference.call)
; a type named before a static member (``Console.WriteLine``, ``CarrierKind.Air``)
((member_access_expression expression: (identifier) @reference.type) (#match? @reference.type "^[A-Z]"))
