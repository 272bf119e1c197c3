(method name: (_) @name body: (_) @body) @definition.function
(method name: (_) @name !body) @definition.function
(singleton_method name: (_) @name body: (_) @body) @definition.function
(singleton_method name: (_) @name !body) @definition.function
(class name: [(constant) (scope_resolution)] @name body: (_) @body) @definition.class
(class name: [(constant) (scope_resolution)] @name !body) @definition.class
(module name: [(constant) (scope_resolution)] @name body: (_) @body) @definition.class
(module name: [(constant) (scope_resolution)] @name !body) @definition.class

(call method: (identifier) @reference.call)
(superclass (constant) @reference.type)
(constant) @reference.type
