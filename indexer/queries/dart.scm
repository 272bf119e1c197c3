; Dart: classes, mixins, enums and extensions are classes; methods, getters, setters,
; constructors (named ones by their own name) and functions are functions. This grammar puts
; a method's body beside its signature, not inside it: the pattern captures the signature as
; the definition and the body that follows as @body (a block, collapsed in skeletons) or
; @tail (``=> expr``, kept), and the chunker joins the two (``definitions.Joined``).
(class_definition name: (identifier) @name body: (class_body) @body) @definition.class
(mixin_declaration (identifier) @name (class_body) @body) @definition.class
(enum_declaration name: (identifier) @name body: (enum_body) @body) @definition.class
(extension_declaration name: (identifier) @name body: (extension_body) @body) @definition.class
(type_alias (type_identifier) @name) @definition.type

((method_signature [(function_signature name: (identifier) @name)
                    (getter_signature name: (identifier) @name)
                    (setter_signature name: (identifier) @name)
                    (constructor_signature (identifier) @name . (formal_parameter_list))
                    (factory_constructor_signature (identifier) @name . (formal_parameter_list))])
  @definition.function . (function_body (block) @body))
((method_signature [(function_signature name: (identifier) @name)
                    (getter_signature name: (identifier) @name)
                    (setter_signature name: (identifier) @name)
                    (constructor_signature (identifier) @name . (formal_parameter_list))
                    (factory_constructor_signature (identifier) @name . (formal_parameter_list))])
  @definition.function . (function_body "=>") @tail)
((declaration [(constructor_signature (identifier) @name . (formal_parameter_list))])
  @definition.function . (function_body (block) @body))
(declaration [(function_signature name: (identifier) @name)
              (getter_signature name: (identifier) @name)
              (setter_signature name: (identifier) @name)
              (constructor_signature (identifier) @name . (formal_parameter_list))]) @definition.function
((function_signature name: (identifier) @name) @definition.function . (function_body (block) @body))
((function_signature name: (identifier) @name) @definition.function . (function_body "=>") @tail)
((getter_signature name: (identifier) @name) @definition.function . (function_body (block) @body))
((getter_signature name: (identifier) @name) @definition.function . (function_body "=>") @tail)

(superclass (type_identifier) @reference.type)
(mixins (type_identifier) @reference.type)
(interfaces (type_identifier) @reference.type)
(type_identifier) @reference.type
(annotation name: (identifier) @reference.call)
; a call: a name followed by its arguments (``emit(state)``, ``_repo.save(v)``)
((identifier) @reference.call . (selector (argument_part)))
((selector (unconditional_assignable_selector (identifier) @reference.call)) . (selector (argument_part)))
