; Kotlin: classes, interfaces, enum classes and objects are classes (a companion object is
; not: its members belong to the class); functions are functions, an extension function
; named after its receiver (``Order.total``). An expression body (``= expr``) stays in the
; skeleton. Properties are fields (a getter on its own line is not even inside its
; property in this grammar). This grammar has few fields: children are matched by type.
(class_declaration (type_identifier) @name (class_body) @body) @definition.class
(class_declaration (type_identifier) @name (enum_class_body) @body) @definition.class
(class_declaration (type_identifier) @name) @definition.class
(object_declaration (type_identifier) @name (class_body) @body) @definition.class
(object_declaration (type_identifier) @name) @definition.class
(function_declaration !receiver (simple_identifier) @name (function_body "{") @body) @definition.function
(function_declaration !receiver (simple_identifier) @name) @definition.function
(function_declaration
  receiver: (receiver_type [(user_type (type_identifier) @receiver)
                            (nullable_type (user_type (type_identifier) @receiver))])
  (simple_identifier) @name (function_body "{") @body) @definition.function
(function_declaration
  receiver: (receiver_type [(user_type (type_identifier) @receiver)
                            (nullable_type (user_type (type_identifier) @receiver))])
  (simple_identifier) @name) @definition.function
(type_alias (type_identifier) @name) @definition.type

(call_expression (simple_identifier) @reference.call)
(call_expression (navigation_expression (navigation_suffix (simple_identifier) @reference.call)))
(delegation_specifier (user_type (type_identifier) @reference.type))
(delegation_specifier (constructor_invocation (user_type (type_identifier) @reference.type)))
(user_type (type_identifier) @reference.type)
(annotation (user_type (type_identifier) @reference.call))
; a type named before a member (``Season.SUMMER``, ``Duration.ofMinutes``)
((navigation_expression . (simple_identifier) @reference.type) (#match? @reference.type "^[A-Z]"))
