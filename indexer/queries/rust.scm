(function_item name: (identifier) @name body: (block) @body) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.class
(enum_item name: (type_identifier) @name body: (enum_variant_list) @body) @definition.class
(union_item name: (type_identifier) @name) @definition.class
(trait_item name: (type_identifier) @name body: (declaration_list) @body) @definition.class
(impl_item type: (type_identifier) @name body: (declaration_list) @body) @definition.class
(impl_item type: (generic_type type: (type_identifier) @name) body: (declaration_list) @body) @definition.class
(mod_item name: (identifier) @name body: (declaration_list) @body) @definition.class
(type_item name: (type_identifier) @name) @definition.type
(macro_definition name: (identifier) @name) @definition.function

(call_expression function: (identifier) @reference.call)
(call_expression function: (field_expression field: (field_identifier) @reference.call))
(call_expression function: (scoped_identifier name: (identifier) @reference.call))
(call_expression function: (scoped_identifier path: (identifier) @reference.type))
(macro_invocation macro: (identifier) @reference.call)
(type_identifier) @reference.type
