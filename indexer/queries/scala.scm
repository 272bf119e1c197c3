; Scala: classes, traits, objects and enums are classes; methods (abstract ones too) are
; functions. A body in braces is collapsed in skeletons; an expression body (``= expr``) or
; a Scala 3 indented one stays as written.
(class_definition name: (identifier) @name body: (template_body) @body) @definition.class
(class_definition name: (identifier) @name) @definition.class
(trait_definition name: (identifier) @name body: (template_body) @body) @definition.class
(trait_definition name: (identifier) @name) @definition.class
(object_definition name: (identifier) @name body: (template_body) @body) @definition.class
(object_definition name: (identifier) @name) @definition.class
(enum_definition name: (identifier) @name body: (enum_body) @body) @definition.class
(function_definition name: (identifier) @name body: (block) @body) @definition.function
(function_definition name: (identifier) @name) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(type_definition name: (type_identifier) @name) @definition.type

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (identifier) @reference.call))
(call_expression function: (generic_function function: (identifier) @reference.call))
(instance_expression (type_identifier) @reference.type)
(type_identifier) @reference.type
; an object named before a member (``TaxTable.default``, ``Ordering.by``)
((field_expression value: (identifier) @reference.type) (#match? @reference.type "^[A-Z]"))
