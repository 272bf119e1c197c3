(method_declaration name: (identifier) @name body: (block) @body) @definition.function
(method_declaration name: (identifier) @name !body) @definition.function
(constructor_declaration name: (identifier) @name body: (constructor_body) @body) @definition.function
(class_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(interface_declaration name: (identifier) @name body: (interface_body) @body) @definition.class
(enum_declaration name: (identifier) @name body: (enum_body) @body) @definition.class
(enum_constant name: (identifier) @name body: (class_body) @body) @definition.class
(record_declaration name: (identifier) @name body: (class_body) @body) @definition.class
(annotation_type_declaration name: (identifier) @name body: (annotation_type_body) @body) @definition.class

(method_invocation name: (identifier) @reference.call)
(object_creation_expression type: (type_identifier) @reference.type)
(type_identifier) @reference.type
