; Haskell: data types, newtypes, type classes and instances are classes; each equation of a
; function (and a plain binding such as ``main = ...``) is a function, with its type
; signature and Haddock comment attached; type synonyms are types. Bodies are not collapsed
; in skeletons (layout, not braces): an instance's skeleton shows its equations.
(data_type name: (name) @name) @definition.class
(newtype name: (name) @name) @definition.class
(class name: (name) @name declarations: (class_declarations) @body) @definition.class
(class name: (name) @name) @definition.class
(instance name: (name) @name declarations: (instance_declarations) @body) @definition.class
(instance name: (name) @name) @definition.class
(type_synomym name: (name) @name) @definition.type
(function name: (variable) @name) @definition.function
(bind name: (variable) @name) @definition.function

(apply function: (variable) @reference.call)
(apply function: (qualified (variable) @reference.call))
(name) @reference.type
(constructor) @reference.type
